"""API Priority and Fairness: priority levels, their seats, queues and dispatching.

The server's concurrency limit (upstream: --max-requests-inflight + --max-mutating-requests-
inflight) is divided among the Limited priority levels by nominalConcurrencyShares:
NominalCL = ceil(ServerCL * shares / sum of shares), LendableCL = round(NominalCL *
lendablePercent / 100), BorrowingCL = round(NominalCL * borrowingLimitPercent / 100) (no limit
when unset). Where upstream re-divides the seats every 10 s from measured demand, we keep a
static split that gives the same guarantees: each level owns NominalCL - LendableCL seats,
and all lent seats form one pool from which any level may take up to LendableCL + BorrowingCL
more while they are free (a level whose lent seats are busy waits for the pool; upstream would
hand them back at its next re-division).

A request that finds no free seat is refused (limitResponse Reject) or queued (Queue): its
flow (FlowSchema + distinguisher) is hashed to a hand of `handSize` queues out of `queues`
(shuffle sharding), it joins the shortest of them unless that one holds `queueLengthLimit`
requests, and waits at most the queue wait limit. Freed seats go to the queues in turn,
round-robin over the non-empty ones: a flow with one request waiting is served after at most
one request of each other waiting flow, whatever their backlog (upstream orders by virtual
finish time; round-robin gives the same isolation for requests of equal cost).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from typing import Any

__all__ = ["Dispatcher", "PriorityLevel", "Ticket", "RetryAfter", "deal_hand"]

# upstream's defaults for a Limited level's fields left unset (flowcontrol/v1 defaults.go)
DEFAULT_SHARES = 30
DEFAULT_QUEUES, DEFAULT_HAND_SIZE, DEFAULT_QUEUE_LENGTH = 64, 8, 50


class Ticket:
    """The seats a request holds; release() gives them back (once) and wakes waiting requests."""

    __slots__ = ("level", "own", "pool", "queue", "done")

    def __init__(self, level: PriorityLevel, own: int, pool: int, queue: int) -> None:
        self.level = level
        self.own = own
        self.pool = pool
        self.queue = queue
        self.done = False

    def release(self) -> None:
        if self.done:
            return
        self.done = True
        self.level._release(self)


class _Waiter:
    __slots__ = ("seats", "queue", "future", "timer")

    def __init__(self, seats: int, queue: int, future: asyncio.Future[Ticket | None]) -> None:
        self.seats = seats
        self.queue = queue
        self.future = future
        self.timer: asyncio.TimerHandle | None = None


def deal_hand(flow_hash: int, deck: int, hand: int) -> list[int]:
    """`hand` distinct queue indexes out of `deck`, from the hash's digits in a mixed radix (shuffle sharding)."""
    remaining = list(range(deck))
    out = []
    for _ in range(min(hand, deck)):
        flow_hash, i = divmod(flow_hash, len(remaining))
        out.append(remaining.pop(i))
    return out


class RetryAfter:
    """The Retry-After of a level's refusals: 1 s, doubled (up to 32) when refusals keep coming
    (3 per current second of Retry-After, counted over that many past seconds), then one less
    per second with fewer refusals than that (as upstream's dropped-requests tracker)."""

    MAX = 32
    __slots__ = ("history", "second", "count", "value", "raised_at")

    def __init__(self) -> None:
        self.history: deque[tuple[int, int]] = deque()
        self.second = 0
        self.count = 0
        self.value = 1
        self.raised_at = 0

    def record(self, now: int | None = None) -> None:
        now = int(time.time()) if now is None else now
        if now == self.second:
            self.count += 1
            return
        if self.count:
            self.history.append((self.second, self.count))
        while self.history and self.second - self.history[0][0] > self.MAX:
            self.history.popleft()
        self.second, self.count = now, 1
        dropped = sum(n for t, n in self.history if now - t <= self.value and t < now)
        if now - self.raised_at >= self.value and dropped >= 3 * self.value:
            self.value = min(self.value * 2, self.MAX)
            self.raised_at = now
        elif dropped < self.value and self.value > 1:
            self.value -= 1


class Dispatcher:
    """The server's seats: every level's own ones, and the pool of lent seats they share."""

    def __init__(self) -> None:
        self.pool_size = 0
        self.pool_used = 0
        self.levels: dict[str, PriorityLevel] = {}
        self.retired: list[PriorityLevel] = []  # deleted levels whose queued requests still wait

    def configure(self, specs: list[tuple[str, str, dict[str, Any]]], server_cl: int) -> None:
        """(name, uid, spec) of every PriorityLevelConfiguration: levels keep their requests across changes."""
        shares = {}
        for name, _, spec in specs:
            if spec.get("type") == "Exempt":
                shares[name] = int((spec.get("exempt") or {}).get("nominalConcurrencyShares") or 0)
            else:
                limited = spec.get("limited") or {}
                ncs = limited.get("nominalConcurrencyShares")
                shares[name] = DEFAULT_SHARES if ncs is None else int(ncs)
        total = sum(shares.values()) or 1
        levels: dict[str, PriorityLevel] = {}
        for name, uid, spec in specs:
            level = self.levels.get(name) or PriorityLevel(self, name)
            nominal = math.ceil(server_cl * shares[name] / total)
            level.configure(uid, spec, nominal)
            levels[name] = level
        # a level that went away keeps its requests' seats until they finish, and serves the ones
        # it queued; it takes no new ones
        self.retired = [lv for lv in [*self.retired, *self.levels.values()] if lv.name not in levels and lv.waiting]
        self.levels = levels
        self.pool_size = sum(lv.lendable for lv in levels.values() if not lv.exempt)
        self._wake_all()  # more seats now, perhaps: the queues need not wait for the next release

    def _wake_all(self) -> None:
        for level in [*self.levels.values(), *self.retired]:
            if level.waiting:
                level._dispatch()
        if self.retired:
            self.retired = [lv for lv in self.retired if lv.waiting]


class PriorityLevel:
    __slots__ = ("dispatcher", "name", "uid", "exempt", "queuing", "nominal", "lendable", "guaranteed",
                 "borrow_cap", "own_used", "pool_held", "executing", "queues", "queue_exec", "hand_size",
                 "queue_length_limit", "ring", "waiting", "retry_after", "_hands")

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        self.dispatcher = dispatcher
        self.name = name
        self.uid = ""
        self.exempt = False
        self.queuing = False
        self.nominal = self.lendable = self.guaranteed = 0
        self.borrow_cap: float = 0
        self.own_used = 0
        self.pool_held = 0
        self.executing = 0  # requests, for tests and metrics
        self.queues: list[deque[_Waiter]] = []
        self.queue_exec: list[int] = []  # seats executing per queue: the queue choice counts them
        self.hand_size = 0
        self.queue_length_limit = 0
        self.ring: deque[int] = deque()  # the non-empty queues, in dispatch turn
        self.waiting = 0
        self.retry_after = RetryAfter()
        self._hands: dict[int, list[int]] = {}

    def configure(self, uid: str, spec: dict[str, Any], nominal: int) -> None:
        self.uid = uid
        self.exempt = spec.get("type") == "Exempt"
        limited = spec.get("limited") or {}
        self.nominal = nominal
        self.lendable = 0 if self.exempt else round(nominal * int(limited.get("lendablePercent") or 0) / 100)
        self.guaranteed = nominal - self.lendable
        borrowing = limited.get("borrowingLimitPercent")
        self.borrow_cap = self.lendable + (math.inf if borrowing is None else round(nominal * int(borrowing) / 100))
        response = limited.get("limitResponse") or {}
        queuing = response.get("queuing") or {}
        self.queuing = not self.exempt and response.get("type") == "Queue"
        n = int(queuing.get("queues") or DEFAULT_QUEUES) if self.queuing else 0
        self.hand_size = min(n, int(queuing.get("handSize") or DEFAULT_HAND_SIZE)) if n else 0
        self.queue_length_limit = int(queuing.get("queueLengthLimit") or DEFAULT_QUEUE_LENGTH) if n else 0
        if n != len(self.queues):
            self._requeue(n)

    def _requeue(self, n: int) -> None:
        """New queue count: waiting requests keep their order, spread over the new queues."""
        old = [w for q in self.queues for w in q]
        self.queues = [deque() for _ in range(n)]
        self.queue_exec = [0] * n
        self.ring.clear()
        self._hands.clear()
        for i, w in enumerate(old):
            w.queue = i % n if n else -1
            if n:
                if not self.queues[w.queue]:
                    self.ring.append(w.queue)
                self.queues[w.queue].append(w)
            elif not w.future.done():  # the level stopped queuing: the waiting requests are refused
                self.waiting -= 1
                w.future.set_result(None)

    def max_seats(self) -> int:
        """The most seats one request may take here (a wider one would never fit)."""
        return max(1, int(min(self.guaranteed + self.borrow_cap, self.guaranteed + self.dispatcher.pool_size)))

    # ---- seats ---------------------------------------------------------------------------
    def try_start(self, seats: int, queue: int = -1) -> Ticket | None:
        """Seats now, own ones first, else from the pool; None when neither has enough."""
        if self.exempt:
            self.executing += 1
            return Ticket(self, 0, 0, -1)
        own = min(max(self.guaranteed - self.own_used, 0), seats)
        pool = seats - own
        if pool:
            d = self.dispatcher
            if d.pool_used + pool > d.pool_size or self.pool_held + pool > self.borrow_cap:
                return None
            d.pool_used += pool
            self.pool_held += pool
        self.own_used += own
        self.executing += 1
        if queue >= 0:
            self.queue_exec[queue] += seats
        return Ticket(self, own, pool, queue)

    def _release(self, t: Ticket) -> None:
        self.executing -= 1
        if self.exempt:
            return
        self.own_used -= t.own
        if 0 <= t.queue < len(self.queue_exec):
            self.queue_exec[t.queue] -= t.own + t.pool
        if t.pool:
            self.pool_held -= t.pool
            self.dispatcher.pool_used -= t.pool
            self.dispatcher._wake_all()  # lent seats came back: any level may be waiting for them
        elif self.waiting:
            self._dispatch()

    # ---- queues --------------------------------------------------------------------------
    def enqueue(self, flow_hash: int, seats: int, wait_limit: float) -> asyncio.Future[Ticket | None] | None:
        """Queue a request of the flow; its future gives the Ticket, or None when it waited too long.
        None: refused at once (no queues here, or the chosen queue is full)."""
        if not self.queuing:
            return None
        hand = self._hands.get(flow_hash)
        if hand is None:
            if len(self._hands) > 10000:
                self._hands.clear()
            hand = self._hands[flow_hash] = deal_hand(flow_hash, len(self.queues), self.hand_size)
        qi = min(hand, key=lambda i: len(self.queues[i]) + self.queue_exec[i])
        q = self.queues[qi]
        if len(q) >= self.queue_length_limit:
            return None
        loop = asyncio.get_running_loop()
        w = _Waiter(seats, qi, loop.create_future())
        if not q:
            self.ring.append(qi)
        q.append(w)
        self.waiting += 1
        w.timer = loop.call_later(wait_limit, self._give_up, w)
        self._dispatch()  # seats may be free behind a wider request at the head of another queue's turn
        return w.future

    def _give_up(self, w: _Waiter) -> None:
        """A request leaves its queue unserved: it waited too long, or its client went away."""
        if w.future.done() and not w.future.cancelled():
            return  # it got its seats already
        if w.timer is not None:
            w.timer.cancel()
        q = self.queues[w.queue] if 0 <= w.queue < len(self.queues) else None
        if q is not None:
            try:
                q.remove(w)
            except ValueError:
                pass
            if not q:
                try:
                    self.ring.remove(w.queue)
                except ValueError:
                    pass
        self.waiting -= 1
        if not w.future.done():
            w.future.set_result(None)

    def cancel(self, fut: asyncio.Future[Ticket | None]) -> None:
        """The waiting request's client went away: out of the queue, or its seats back if it got them."""
        if fut.done() and not fut.cancelled():
            t = fut.result()
            if t is not None:
                t.release()
            return
        for q in self.queues:
            for w in q:
                if w.future is fut:
                    self._give_up(w)
                    return

    def _dispatch(self) -> None:
        """Hand free seats to the queues in turn (round-robin over the non-empty ones)."""
        ring, queues = self.ring, self.queues
        while ring:
            qi = ring[0]
            q = queues[qi]
            w = q[0]
            if w.future.done():  # cancelled without cancel(): drop it
                self._give_up(w)
                continue
            t = self.try_start(w.seats, qi)
            if t is None:
                return  # the next request in turn does not fit yet
            q.popleft()
            ring.popleft()
            if q:
                ring.append(qi)
            self.waiting -= 1
            if w.timer is not None:
                w.timer.cancel()
            w.future.set_result(t)
