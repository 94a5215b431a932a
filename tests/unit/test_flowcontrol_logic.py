"""API Priority and Fairness, the pure parts: FlowSchema rule matching (upstream's rule.go semantics),
shuffle-sharding hands, the Retry-After tracker, and a priority level's seats and queues (round-robin
turns, the queue wait limit, a client leaving its queue, borrowing from the lent-seat pool)."""

from __future__ import annotations

import asyncio

import pytest

from pyk8s.apiserver.flowcontrol_match import Digest, compile_flow_schema, distinguisher_of
from pyk8s.apiserver.flowcontrol_queues import Dispatcher, RetryAfter, deal_hand
from pyk8s.client.rest import _retry_after


def _fs(subjects: list[dict], resource_rules=None, non_resource_rules=None, distinguisher="ByUser") -> object:
    rule: dict = {"subjects": subjects}
    if resource_rules is not None:
        rule["resourceRules"] = resource_rules
    if non_resource_rules is not None:
        rule["nonResourceRules"] = non_resource_rules
    return compile_flow_schema({"metadata": {"name": "fs", "uid": "u1"}, "spec": {
        "priorityLevelConfiguration": {"name": "pl"}, "matchingPrecedence": 10,
        "distinguisherMethod": {"type": distinguisher}, "rules": [rule]}})


def _res(user="alice", groups=("system:authenticated",), verb="get", group="", resource="pods", ns="default"):
    return Digest(user, tuple(groups), verb, True, group, resource, ns, "")


SA_STAR = {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}
PODS_ANY_NS = [{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}]


def test_service_account_wildcard_matches_only_service_accounts_of_that_namespace():
    fs = _fs([SA_STAR], PODS_ANY_NS)
    assert fs.matches(_res("system:serviceaccount:kube-system:foo"))
    assert not fs.matches(_res("system:serviceaccount:default:foo"))
    assert not fs.matches(_res("system:serviceaccount:kube-system-x:foo"))
    # a user name forged to look like a service account with more segments is not one
    assert not fs.matches(_res("system:serviceaccount:kube-system:foo:bar"))
    assert not fs.matches(_res("kube-system"))


def test_subjects_by_user_group_and_exact_service_account():
    fs = _fs([{"kind": "User", "user": {"name": "bob"}}, {"kind": "Group", "group": {"name": "ops"}},
              {"kind": "ServiceAccount", "serviceAccount": {"namespace": "ns1", "name": "sa"}}], PODS_ANY_NS)
    assert fs.matches(_res("bob"))
    assert fs.matches(_res("carol", groups=("ops",)))
    assert fs.matches(_res("system:serviceaccount:ns1:sa"))
    assert not fs.matches(_res("system:serviceaccount:ns1:other"))
    assert not fs.matches(_res("bobby"))


def test_resource_rules_scope_subresource_and_group():
    rules = [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "nodes/status"],
              "namespaces": ["team-a"], "clusterScope": True}]
    fs = _fs([{"kind": "Group", "group": {"name": "*"}}], rules)
    assert fs.matches(_res(ns="team-a"))
    assert not fs.matches(_res(ns="team-b"))
    assert not fs.matches(_res(ns="team-a", verb="delete"))
    assert not fs.matches(_res(ns="team-a", group="apps"))
    assert fs.matches(_res(resource="nodes/status", ns=""))
    assert not fs.matches(_res(resource="nodes", ns=""))  # the rule names only the subresource
    no_cluster = _fs([{"kind": "Group", "group": {"name": "*"}}],
                     [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}])
    assert no_cluster.matches(_res(ns="x"))
    assert not no_cluster.matches(_res(resource="nodes", ns=""))  # cluster-scoped needs clusterScope


def test_non_resource_urls_exact_prefix_and_star():
    fs = _fs([{"kind": "Group", "group": {"name": "system:authenticated"}}], None,
             [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics/*"]}])

    def nr(path: str, verb: str = "get") -> Digest:
        return Digest("u", ("system:authenticated",), verb, False, path=path)

    assert fs.matches(nr("/healthz"))
    assert fs.matches(nr("/healthz/etcd"))  # upstream: a plain URL covers what is under it
    assert not fs.matches(nr("/healthzz"))
    assert fs.matches(nr("/metrics/x"))
    assert not fs.matches(nr("/metrics"))
    assert not fs.matches(nr("/healthz", "post"))
    assert not fs.matches(_res())  # resource requests never match non-resource rules


def test_distinguishers():
    d = _res("alice", ns="team-a")
    assert distinguisher_of(_fs([], distinguisher="ByUser"), d) == "alice"
    assert distinguisher_of(_fs([], distinguisher="ByNamespace"), d) == "team-a"
    assert distinguisher_of(_fs([], distinguisher=""), d) == ""


def test_hands_are_distinct_and_stable():
    for h in (0, 1, 12345678901234567, 2**64 - 1):
        hand = deal_hand(h, 128, 6)
        assert len(set(hand)) == 6 and all(0 <= i < 128 for i in hand)
        assert hand == deal_hand(h, 128, 6)
    assert sorted(deal_hand(99, 4, 8)) == [0, 1, 2, 3]  # a hand larger than the deck is the deck


def test_retry_after_doubles_under_sustained_refusals_and_decays():
    ra = RetryAfter()
    for sec in range(100, 104):
        for _ in range(10):
            ra.record(sec)
    assert ra.value > 1
    peak = ra.value
    assert peak <= RetryAfter.MAX
    for sec in range(200, 260):  # one refusal a second: fewer than the current value
        ra.record(sec)
    assert ra.value < peak


def _level(spec: dict, server_cl: int = 4, others: list | None = None):
    d = Dispatcher()
    d.configure([("pl", "uid-pl", spec), *(others or [])], server_cl)
    return d, d.levels["pl"]


QUEUED = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                         "limitResponse": {"type": "Queue", "queuing": {
                                             "queues": 8, "handSize": 1, "queueLengthLimit": 3}}}}


def test_queued_flows_take_turns():
    async def run() -> list[str]:
        _, level = _level(QUEUED, server_cl=1)
        holder = level.try_start(1)
        assert holder is not None and level.try_start(1) is None
        order: list[str] = []
        flows = {}
        # find two flow hashes that land on different queues
        a, b = 1, next(h for h in range(2, 100) if deal_hand(h, 8, 1) != deal_hand(1, 8, 1))
        for name, h in (("a1", a), ("a2", a), ("a3", a), ("b1", b)):
            fut = level.enqueue(h, 1, 30)
            assert fut is not None
            flows[name] = fut
        assert level.enqueue(a, 1, 30) is None  # flow a's queue holds queueLengthLimit requests

        async def served(name: str) -> None:
            t = await flows[name]
            order.append(name)
            await asyncio.sleep(0)
            t.release()

        tasks = [asyncio.ensure_future(served(n)) for n in flows]
        await asyncio.sleep(0)
        holder.release()
        await asyncio.gather(*tasks)
        return order

    order = asyncio.run(run())
    assert order.index("b1") <= 1  # b's one request does not wait behind a's backlog


def test_queue_wait_limit_and_leaving_clients_free_the_queue():
    async def run() -> None:
        _, level = _level(QUEUED, server_cl=1)
        holder = level.try_start(1)
        fut = level.enqueue(7, 1, 0.05)
        assert fut is not None
        assert await fut is None  # waited too long: refused
        assert level.waiting == 0 and not level.ring
        fut2 = level.enqueue(7, 1, 30)
        waiter = asyncio.ensure_future(fut2)
        await asyncio.sleep(0)
        waiter.cancel()  # the client went away while queued
        await asyncio.sleep(0)
        level.cancel(fut2)
        assert level.waiting == 0 and all(not q for q in level.queues)
        holder.release()
        t = level.try_start(1)
        assert t is not None  # no seat leaked
        t.release()
        t.release()  # releasing twice gives back nothing twice
        assert level.own_used == 0 and level.executing == 0

    asyncio.run(run())


def test_reject_level_never_queues_and_exempt_never_limits():
    reject = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}
    d, level = _level(reject, server_cl=1, others=[("exempt", "uid-ex", {"type": "Exempt", "exempt": {}})])
    assert level.try_start(1) is not None
    assert level.try_start(1) is None
    assert level.enqueue(1, 1, 30) is None
    exempt = d.levels["exempt"]
    tickets = [exempt.try_start(1) for _ in range(1000)]
    assert all(tickets) and exempt.executing == 1000


def test_borrowing_from_lent_seats_and_limits():
    lender = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 100,
                                             "limitResponse": {"type": "Reject"}}}
    borrower = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                               "borrowingLimitPercent": 100, "limitResponse": {"type": "Reject"}}}
    d = Dispatcher()
    d.configure([("lender", "l", lender), ("borrower", "b", borrower)], 4)
    b = d.levels["borrower"]
    own = [b.try_start(1) for _ in range(2)]
    assert all(own) and d.pool_used == 0
    borrowed = [b.try_start(1) for _ in range(2)]
    assert all(borrowed) and d.pool_used == 2
    assert b.try_start(1) is None  # pool empty (and borrowing limit reached)
    assert d.levels["lender"].try_start(1) is None  # its seats are lent out until they come back
    for t in borrowed:
        t.release()
    assert d.pool_used == 0 and d.levels["lender"].try_start(1) is not None


@pytest.mark.parametrize("queues", [1, 16])
def test_reconfiguring_queues_keeps_waiting_requests(queues):
    async def run() -> None:
        d, level = _level(QUEUED, server_cl=1)
        holder = level.try_start(1)
        futs = [level.enqueue(h, 1, 30) for h in (1, 2, 3)]
        spec = {**QUEUED, "limited": {**QUEUED["limited"], "limitResponse": {"type": "Queue", "queuing": {
            "queues": queues, "handSize": 1, "queueLengthLimit": 50}}}}
        d.configure([("pl", "uid-pl", spec)], 1)
        assert level.waiting == 3 and d.levels["pl"] is level
        holder.release()
        for f in futs:
            assert f is not None
            t = await f
            assert t is not None
            t.release()

    asyncio.run(run())


def test_a_deleted_level_still_serves_what_it_queued():
    async def run() -> None:
        lender = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 100,
                                                 "limitResponse": {"type": "Reject"}}}
        borrower = {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                   "limitResponse": {"type": "Queue", "queuing": {
                                                       "queues": 4, "handSize": 1, "queueLengthLimit": 5}}}}
        d = Dispatcher()
        d.configure([("lender", "l", lender), ("gone", "g", borrower)], 2)
        gone = d.levels["gone"]
        own, borrowed = gone.try_start(1), gone.try_start(1)
        assert own is not None and borrowed is not None and borrowed.pool == 1
        fut = gone.enqueue(3, 1, 30)
        assert fut is not None
        d.configure([("lender", "l", lender)], 2)  # "gone" deleted while a request waits in it
        assert "gone" not in d.levels
        borrowed.release()  # a lent seat comes back: the deleted level's waiting request gets it
        t = await asyncio.wait_for(fut, 1)
        assert t is not None
        t.release()
        own.release()
        assert d.retired == [] and d.pool_used == 0

    asyncio.run(run())


def test_client_retries_only_429s_that_say_when():
    assert _retry_after(b'{"kind":"Status","code":429,"details":{"retryAfterSeconds":4}}') == 4.0
    assert _retry_after(b'{"details":{"retryAfterSeconds":100000}}') == 60.0  # bounded
    # an eviction a PodDisruptionBudget forbids is an answer, not a request to come back
    assert _retry_after(b'{"reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget"}]}}') is None
    assert _retry_after(b'{"reason":"TooManyRequests"}') is None
    assert _retry_after(b"Too many requests, please try again later.") is None
    assert _retry_after(b'{"details":{"retryAfterSeconds":"5"}}') is None


def test_more_seats_serve_waiting_requests_at_once():
    async def run() -> None:
        d, level = _level(QUEUED, server_cl=1)
        holder = level.try_start(1)
        fut = level.enqueue(5, 1, 30)
        assert fut is not None and not fut.done()
        d.configure([("pl", "uid-pl", QUEUED)], 2)  # the server's concurrency raised: a second seat
        t = await asyncio.wait_for(fut, 1)
        assert t is not None and level.executing == 2
        t.release()
        holder.release()

    asyncio.run(run())
