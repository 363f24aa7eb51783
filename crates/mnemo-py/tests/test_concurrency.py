"""Many Python threads share one Memory: 8 threads add and search at once, nothing is lost;
and AsyncMemory runs many calls at once on asyncio without blocking the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Dict, List

from mnemo import AsyncMemory, Memory

THREADS = 8
PER_THREAD = 6


def test_eight_threads_add_and_search_one_memory_and_nothing_is_lost(mem: Memory) -> None:
    errors: List[BaseException] = []
    found: Dict[int, int] = {}
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(PER_THREAD):
                mem.add(f"thread {t} wrote note {i} about topic{t}x{i}", user_id="shared",
                        metadata={"t": t, "i": i})
                # Searches run beside the other threads' adds.
                mem.search(f"topic{t}x{i}", user_id="shared", limit=5)
            hits = mem.search(f"thread {t} wrote", user_id="shared", limit=100,
                              filters={"t": t})["results"]
            found[t] = len(hits)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    everything = mem.get_all(user_id="shared", limit=1000)["results"]
    assert len(everything) == THREADS * PER_THREAD
    texts = {m["memory"] for m in everything}
    assert texts == {f"thread {t} wrote note {i} about topic{t}x{i}"
                     for t in range(THREADS) for i in range(PER_THREAD)}
    assert found == {t: PER_THREAD for t in range(THREADS)}


def test_async_memory_gathers_many_adds_and_searches(settings: Dict[str, Any]) -> None:
    async def main() -> None:
        m = AsyncMemory(**settings)
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            # Counts event-loop turns while the calls run: a call that blocked the loop
            # would leave no room for these.
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0)

        tick_task = asyncio.create_task(ticker())
        adds = [m.add(f"async fact {i} mentions word{i}", user_id="aio", session_id=f"s{i % 3}")
                for i in range(24)]
        outs = await asyncio.gather(*adds)
        assert all(len(o["results"]) == 1 for o in outs)
        searches = [m.search(f"word{i}", user_id="aio", limit=3) for i in range(24)]
        hits = await asyncio.gather(*searches)
        done.set()
        await tick_task
        for i, h in enumerate(hits):
            assert any(r["memory"] == f"async fact {i} mentions word{i}" for r in h["results"])
        listed = await m.get_all(user_id="aio", limit=100)
        assert len(listed["results"]) == 24
        assert ticks > 0
        # The rest of the async surface answers like Memory's.
        first = outs[0]["results"][0]["id"]
        assert (await m.get(first))["id"] == first
        await m.update(first, "async fact changed")
        assert [e["event"] for e in await m.history(first)] == ["ADD", "UPDATE"]
        pack = await m.context("word3", user_id="aio", budget_tokens=200)
        assert "word3" in pack["rendered"]
        await m.delete(first)
        assert (await m.delete_all(user_id="aio"))["deleted"] == 23

    asyncio.run(main())
