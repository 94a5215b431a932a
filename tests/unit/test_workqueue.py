"""The work queue never hands one key to two workers, coalesces repeats, and backs off failures."""

import asyncio

from pyk8s.client.workqueue import RateLimitingQueue


def test_coalesces_and_serialises_keys():
    async def main():
        q = RateLimitingQueue()
        q.add("a")
        q.add("a")
        q.add("b")
        assert len(q) == 2
        item = await q.get()
        assert item == "a"
        q.add("a")  # while processing: queued again only after done
        assert await q.get() == "b"
        q.done("b")
        assert len(q) == 0
        q.done("a")
        assert await asyncio.wait_for(q.get(), 1) == "a"

    asyncio.run(main())


def test_failures_back_off_exponentially():
    async def main():
        q = RateLimitingQueue(base_delay=0.01)
        delays = [q.when("x") for _ in range(5)]
        assert delays == [0.01, 0.02, 0.04, 0.08, 0.16]
        q.forget("x")
        assert q.when("x") == 0.01

    asyncio.run(main())


def test_add_after_delivers_later():
    async def main():
        q = RateLimitingQueue()
        loop = asyncio.get_running_loop()
        t = loop.time()
        q.add_after("k", 0.1)
        assert await asyncio.wait_for(q.get(), 2) == "k"
        assert loop.time() - t >= 0.09

    asyncio.run(main())


def test_delays_under_uvloop_mix_sub_millisecond_and_longer() -> None:
    """uvloop turns call_later(<1 ms) into a plain Handle with no when(); the queue must not
    depend on it (this once crashed every controller's worker and restarted the manager)."""
    import uvloop

    async def main() -> list[str]:
        q = RateLimitingQueue()
        q.add_after("soon", 0.0004)
        q.add_after("later", 0.05)
        q.add_after("sooner", 0.0001)
        got = [await asyncio.wait_for(q.get(), 1) for _ in range(3)]
        return got

    got = uvloop.run(main())
    assert sorted(got[:2]) == ["soon", "sooner"] and got[2] == "later"


def test_add_after_keeps_the_earlier_ready_time_of_a_waiting_item():
    """As client-go's delaying queue: repeated delayed adds of one key make one delivery, at the earliest time."""
    async def main():
        q = RateLimitingQueue()
        loop = asyncio.get_running_loop()
        t = loop.time()
        for _ in range(100):
            q.add_after("k", 0.3)
        q.add_after("k", 0.05)
        q.add_after("k", 0.2)
        assert len(q._waiting) == 2
        assert await asyncio.wait_for(q.get(), 2) == "k"
        assert loop.time() - t < 0.2
        q.done("k")
        await asyncio.sleep(0.4)
        assert len(q) == 0  # the superseded 0.3 s entry delivered nothing

    asyncio.run(main())


def test_waiting_workers_are_woken_one_per_item_and_all_at_shutdown():
    async def main():
        q = RateLimitingQueue()
        got: list[str] = []

        async def worker() -> None:
            try:
                while True:
                    item = await q.get()
                    got.append(item)
                    await asyncio.sleep(0)
                    q.done(item)
            except asyncio.CancelledError:
                pass

        tasks = [asyncio.ensure_future(worker()) for _ in range(4)]
        await asyncio.sleep(0.01)  # all four wait
        for k in "abcdefgh":
            q.add(k)
        for _ in range(50):
            if len(got) == 8:
                break
            await asyncio.sleep(0.01)
        assert sorted(got) == list("abcdefgh")
        q.shutdown()
        await asyncio.wait_for(asyncio.gather(*tasks), 1)  # every waiting worker ended

    asyncio.run(main())


def test_a_worker_cancelled_after_its_wake_up_passes_the_item_on():
    async def main():
        q = RateLimitingQueue()
        first = asyncio.ensure_future(q.get())
        second = asyncio.ensure_future(q.get())
        await asyncio.sleep(0.01)
        q.add("k")  # wakes `first`...
        first.cancel()  # ...which is cancelled before it runs
        assert await asyncio.wait_for(second, 1) == "k"

    asyncio.run(main())
