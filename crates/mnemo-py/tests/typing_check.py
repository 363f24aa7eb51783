"""Not a test: code a type checker reads (mypy --strict, in ./scripts/test.sh) to check that the
stubs and annotations describe the API as users call it."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

import mnemo
from mnemo import AsyncMemory, Memory, MnemoError


def sync_use(m: Memory) -> List[str]:
    out: Dict[str, Any] = m.add([{"role": "user", "content": "hi"}], user_id="u", infer=False)
    ids: List[str] = [r["id"] for r in out["results"]]
    m.search("hi", user_id="u", limit=5, filters={"k": "v"}, threshold=0.1, expand_links=2)
    m.get(ids[0], detail=True)
    m.update(ids[0], "hello", metadata={"a": 1})
    events: List[Dict[str, Any]] = m.history(ids[0])
    assert events
    pack = m.context("hi", user_id="u", budget_tokens=500, session_id="s")
    rendered: str = pack["rendered"]
    removed: bool = m.remove_link(ids[0], ids[0], user_id="u")
    profile: Optional[Dict[str, Any]] = m.profile(user_id="u")
    m.erase(ids[0], reason="asked")
    m.erase(session_id="s", user_id="u")
    m.erase(user_id="u", confirm=True)
    records: List[Dict[str, Any]] = m.export()
    m.import_(records)
    m.reset()
    del rendered, removed, profile
    return ids


async def async_use(m: AsyncMemory) -> None:
    out = await m.add("hi", user_id="u")
    await asyncio.gather(m.search("hi", user_id="u"), m.get_all(user_id="u"))
    await m.delete(out["results"][0]["id"])


def errors_use() -> Optional[str]:
    try:
        Memory.from_config({"data_dir": "/tmp/x"})
    except MnemoError as e:
        kind: str = e.kind
        retry: bool = e.retryable
        msg: str = e.message
        return f"{kind} {retry} {msg}"
    except mnemo.InvalidInputError:
        return None
    return mnemo.__version__
