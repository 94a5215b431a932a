"""The scheduling cycle of a pod some extender is interested in (upstream schedulePod with
extenders): our PreFilter/Filter, then each extender's filter over the nodes left; our scores
plus the extenders' weighted priorities; then the usual assume/Reserve/Permit.

The extenders are awaited, so the cache may change meanwhile: nodes are carried by name across
the calls and mapped back to rows afterwards (a node gone meanwhile is dropped).
"""

from __future__ import annotations

import logging

import numpy as np

from .extender import ExtenderError, HTTPExtender
from .framework import Code, CycleState, ScheduleResult, Status, select_host
from .queue import QueuedPodInfo
from .scheduler import Decision, Scheduler

__all__ = ["interested_extenders", "schedule_with_extenders"]

log = logging.getLogger("pyk8s.scheduler")


def interested_extenders(sched: Scheduler, qpi: QueuedPodInfo) -> list[HTTPExtender]:
    return [e for e in sched.extenders if e.is_interested(qpi.pod_info)]


async def schedule_with_extenders(sched: Scheduler, qpi: QueuedPodInfo, extenders: list[HTTPExtender]) -> Decision | None:
    p = qpi.pod_info
    prof = sched.profiles.get(p.tmpl.scheduler_name)
    if prof is None or p.terminating or sched.cache.is_assumed_pod(p):
        sched.queue.done(p.key)
        return None
    state = CycleState()
    table = sched.cache.table
    state.table = table
    if table.n == 0:
        return sched.decide(qpi, prof, state, prof.schedule_one(p, sched.cache, state))
    feasible, diag, processed = prof.find_nodes_that_fit(state, p, table)
    names = list(table.names)  # the rows the diagnosis speaks of
    diag.names = names
    cand = [names[int(r)] for r in feasible]
    nodes = {n: table.nodes[table.index[n]] for n in cand}
    try:
        for ext in extenders:
            if not cand:
                break
            if not ext.cfg.filter_verb:
                continue
            try:
                passed, failed, unresolvable = await ext.filter(p, [nodes[n] for n in cand])
            except ExtenderError as e:
                if ext.cfg.ignorable:
                    log.warning("skipping ignorable extender %s: %s", ext.name, e)
                    continue
                raise
            row_of = {n: i for i, n in enumerate(names)}
            for failures, code in ((failed, Code.UNSCHEDULABLE), (unresolvable, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)):
                for n, reason in failures.items():
                    if n in row_of and n in nodes:
                        diag.set_rows(np.array([row_of[n]]), diag.add_status(Status(code, (reason,), ext.name)))
            keep = set(passed)
            cand = [n for n in cand if n in keep]
    except ExtenderError as e:
        return sched.decide(qpi, prof, state, ScheduleResult(None, status=Status(Code.ERROR, (str(e),))))
    # back to rows of the table as it is now
    table = sched.cache.table
    rows = np.array([table.index[n] for n in cand if n in table.index], dtype=np.int64)
    if rows.size == 0:
        result = ScheduleResult(None, processed, 0, diag, Status(Code.UNSCHEDULABLE))
        if prof.post_filter:
            pf, st = prof.run_post_filter(state, p, diag)
            diag.post_filter_msg = st.message()
            result.post_filter = pf
        return sched.decide(qpi, prof, state, result)
    evaluated = rows.size + diag.explicit_count()
    if rows.size == 1:
        return sched.decide(qpi, prof, state, ScheduleResult(table.names[int(rows[0])], evaluated, 1, diag))
    total, _ = prof.prioritize(state, p, table, rows)
    total = total.astype(np.int64, copy=True)
    row_names = [table.names[int(r)] for r in rows]
    for ext in extenders:
        if not ext.cfg.prioritize_verb:
            continue
        try:
            scores = await ext.prioritize(p, [table.nodes[int(r)] for r in rows])
        except ExtenderError as e:  # as upstream: a prioritize error is logged and ignored
            log.info("extender %s prioritize: %s", ext.name, e)
            continue
        total += np.array([scores.get(n, 0) for n in row_names], dtype=np.int64)
    table = sched.cache.table
    chosen = row_names[select_host(total, sched.handle.rng)]
    if chosen not in table.index:
        return sched.decide(qpi, prof, state, ScheduleResult(
            None, status=Status(Code.ERROR, (f'node "{chosen}" not found',))))
    return sched.decide(qpi, prof, state, ScheduleResult(chosen, evaluated, int(rows.size), diag))
