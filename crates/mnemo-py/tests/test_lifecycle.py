"""A process's life around mnemo: ``os.fork()`` after mnemo was used (a plain child and a
``multiprocessing`` fork pool), and interpreter exit with ``AsyncMemory`` calls just finished.
Each scenario runs in a fresh interpreter ``RUNS`` times and every run must exit 0 within its
bound: the faults these guard against (a child waiting for ever on threads that only exist in
its parent, or on a lock one of them held when it forked; a tokio thread dropping a Python
object during ``Py_FinalizeEx``) show up in some runs only, never in a single one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import List, Optional


from conftest import models_dir

# Runs of each scenario (the bar: at least 25, every exit code 0).
RUNS = int(os.environ.get("MNEMO_LIFECYCLE_RUNS", "25"))
# Seconds one run may take before it counts as hung.
BOUND = 240
# Runs at once (each its own interpreter; the faults are per process, not per machine load).
AT_ONCE = int(os.environ.get("MNEMO_LIFECYCLE_AT_ONCE", "4"))

FORK = textwrap.dedent(
    """
    import multiprocessing, os, sys, traceback
    from mnemo import ConflictError, Memory

    base, models = sys.argv[1], sys.argv[2]

    def pool_work(i):
        m = Memory(data_dir=os.path.join(base, f"pool{i}"), models_dir=models)
        m.add(f"pool fact {i}", user_id="u", infer=False)
        hits = m.search(f"pool fact {i}", user_id="u")["results"]
        return hits[0]["memory"]

    parent = Memory(data_dir=os.path.join(base, "a"), models_dir=models)
    parent.add("x", user_id="u", infer=False)
    parent.search("x", user_id="u")

    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            child = Memory(data_dir=os.path.join(base, "b"), models_dir=models)
            out = child.add("y", user_id="u", infer=False)
            assert [r["memory"] for r in out["results"]] == ["y"], out
            assert child.search("y", user_id="u")["results"][0]["memory"] == "y"
            try:
                parent.add("z", user_id="u", infer=False)
                code = 3
            except ConflictError as e:
                assert "fork" in str(e), e
        except BaseException:
            traceback.print_exc()
            code = 2
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert status == 0, f"the forked child ended with wait status {status}"

    with multiprocessing.get_context("fork").Pool(2) as pool:
        got = pool.map(pool_work, range(3))
    assert got == [f"pool fact {i}" for i in range(3)], got
    # The parent still works after its children.
    assert parent.search("x", user_id="u")["results"][0]["memory"] == "x"
    """
)

EXIT = textwrap.dedent(
    """
    import asyncio, sys
    from mnemo import AsyncMemory

    async def run():
        am = AsyncMemory(data_dir=sys.argv[1], models_dir=sys.argv[2])
        await am.add("warm", user_id="rt", infer=False)
        await asyncio.gather(*(am.search("warm", user_id="rt") for _ in range(50)))

    asyncio.run(run())
    """
)


def run_many(script: str, tmp_path: Path, name: str) -> None:
    def one(i: int) -> Optional[str]:
        base = tmp_path / f"{name}{i}"
        base.mkdir()
        try:
            done = subprocess.run(
                [sys.executable, "-c", script, str(base), models_dir()],
                capture_output=True,
                text=True,
                timeout=BOUND,
            )
        except subprocess.TimeoutExpired:
            return f"run {i}: hung past {BOUND} s"
        if done.returncode != 0:
            return f"run {i}: exit {done.returncode}: {done.stderr[-2000:]}"
        return None

    with ThreadPoolExecutor(AT_ONCE) as pool:
        failures: List[str] = [f for f in pool.map(one, range(RUNS)) if f]
    assert not failures, f"{len(failures)} of {RUNS} runs failed:\n" + "\n".join(failures)


def test_fork_children_and_pool_workers_work(tmp_path: Path) -> None:
    run_many(FORK, tmp_path, "fork")


def test_async_memory_exits_cleanly(tmp_path: Path) -> None:
    # The scenario of the report: 50 searches awaited at once, then interpreter exit.
    run_many(EXIT.replace("sys.argv[1]", "sys.argv[1] + '/d'"), tmp_path, "exit")
