"""Async adds and jobs on SQLite and PostgreSQL: ``add(..., async_mode=True)`` checks its input
at once, answers with Mem0's queued shape, and a worker of this process (one by default,
``jobs.workers`` to choose) writes the memories; ``job(id)`` reports the status; ``close()``
(and ``with``/``async with``) stops the workers after the job each runs, so no job is left
``running`` under a lease and queued ones run at the next open. Waiting polls ``job`` with a
bound."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict

import pytest

from mnemo import (
    AsyncMemory,
    ConflictError,
    InvalidInputError,
    Memory,
    NotFoundError,
    RateLimitedError,
)

# Polls of a job's status before a test gives up (each a short pause).
POLLS = 600


def wait_done(mem: Memory, job_id: str) -> Dict[str, Any]:
    for _ in range(POLLS):
        job = mem.job(job_id)
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    pytest.fail(f"job {job_id} did not finish: {mem.job(job_id)}")


def test_async_add_is_queued_then_written_by_a_worker(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings, jobs={"workers": 1, "poll_ms": 50})
    out = mem.add("I keep bees on the roof.", user_id="ana", async_mode=True)
    queued = out["results"][0]
    assert queued["status"] == "PENDING"
    assert queued["event_id"] == out["job_id"]
    job = wait_done(mem, out["job_id"])
    assert job["status"] == "done", job
    assert job["attempts"] == 1
    written = job["result"]["results"]
    assert [r["memory"] for r in written] == ["I keep bees on the roof."]
    found = mem.get_all(user_id="ana")["results"]
    assert [m["memory"] for m in found] == ["I keep bees on the roof."]


def test_invalid_async_adds_are_refused_before_queuing(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings)
    with pytest.raises(InvalidInputError):
        mem.add("x", user_id="ana", async_mode=True, metadata={"a": "b\u0000"})
    with pytest.raises(InvalidInputError):
        # No chat model: an inferred add cannot run, so it is not queued either.
        mem.add("x", user_id="ana", async_mode=True, infer=True)
    with pytest.raises(InvalidInputError):
        mem.add([], user_id="ana", async_mode=True)
    with pytest.raises(NotFoundError):
        mem.job("00000000-0000-0000-0000-000000000000")
    with pytest.raises(TypeError):
        mem.job(12)  # type: ignore[arg-type]


def test_without_workers_a_job_waits_pending(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings, jobs={"workers": 0})
    out = mem.add("queued, not run", user_id="ana", async_mode=True)
    job = mem.job(out["job_id"])
    assert job["status"] == "pending"
    assert job["user_id"] == "ana"
    assert mem.get_all(user_id="ana")["results"] == []


def test_async_memory_queues_and_reads_jobs(settings: Dict[str, Any]) -> None:
    async def go() -> None:
        mem = AsyncMemory(**settings, jobs={"workers": 2, "poll_ms": 50})
        outs = await asyncio.gather(
            *(mem.add(f"fact number {i}", user_id="bo", async_mode=True) for i in range(6))
        )
        for out in outs:
            for _ in range(POLLS):
                job = await mem.job(out["job_id"])
                if job["status"] == "done":
                    break
                await asyncio.sleep(0.05)
            assert job["status"] == "done", job
        got = await mem.get_all(user_id="bo")
        assert sorted(m["memory"] for m in got["results"]) == sorted(
            f"fact number {i}" for i in range(6)
        )

    asyncio.run(go())


def test_a_full_queue_is_a_retryable_rate_limited_error(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings, jobs={"max_queue_depth": 1, "workers": 0})
    first = mem.add("the one that fits", user_id="ana", async_mode=True)
    assert mem.job(first["job_id"])["status"] == "pending"
    with pytest.raises(RateLimitedError) as refused:
        mem.add("one too many", user_id="ana", async_mode=True)
    assert refused.value.retryable is True
    assert refused.value.kind == "rate_limited"


def test_a_default_memory_runs_its_async_adds(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings)
    out = mem.add("Default workers run this.", user_id="dee", async_mode=True)
    job = wait_done(mem, out["job_id"])
    assert job["status"] == "done", job
    assert [m["memory"] for m in mem.get_all(user_id="dee")["results"]] == [
        "Default workers run this."
    ]


def test_a_default_async_memory_runs_its_async_adds(settings: Dict[str, Any]) -> None:
    async def go() -> None:
        async with AsyncMemory(**settings) as mem:
            out = await mem.add("Async default run.", user_id="dee", async_mode=True)
            for _ in range(POLLS):
                job = await mem.job(out["job_id"])
                if job["status"] in ("done", "failed"):
                    break
                await asyncio.sleep(0.05)
            assert job["status"] == "done", job
        with pytest.raises(ConflictError):
            await mem.get_all(user_id="dee")

    asyncio.run(go())


def test_closing_leaves_no_job_running_and_loses_none(settings: Dict[str, Any]) -> None:
    mem = Memory(**settings)
    ids = [
        mem.add(f"queued fact {i}", user_id="cy", async_mode=True)["job_id"] for i in range(12)
    ]
    mem.close()
    with pytest.raises(ConflictError):
        mem.add("after close", user_id="cy")
    mem.close()  # twice is harmless
    # Closed: every job is done or still pending, none held under a lease.
    with Memory(**settings, jobs={"workers": 0}) as probe:
        states = [probe.job(i)["status"] for i in ids]
    assert set(states) <= {"done", "pending"}, states
    # The next open runs the rest.
    with Memory(**settings) as again:
        for i in ids:
            assert wait_done(again, i)["status"] == "done"
        got = sorted(m["memory"] for m in again.get_all(user_id="cy")["results"])
    assert got == sorted(f"queued fact {i}" for i in range(12))


def test_jobs_queued_without_workers_run_at_the_next_open(settings: Dict[str, Any]) -> None:
    with Memory(**settings, jobs={"workers": 0}) as first:
        job_id = first.add("waits for the next open", user_id="cy", async_mode=True)["job_id"]
        assert first.job(job_id)["status"] == "pending"
    del first
    with Memory(**settings) as second:
        assert wait_done(second, job_id)["status"] == "done"
