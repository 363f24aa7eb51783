"""Core memory blocks from Python, on both backends: create, read, list, the three edits with
their typed errors, history, delete, the pack starting with the blocks (and ``no_blocks``), the
seed, and the same on ``AsyncMemory``."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

import pytest

from mnemo import AsyncMemory, ConflictError, InvalidInputError, Memory, NotFoundError


def test_blocks_round_trip_with_typed_errors(mem: Memory) -> None:
    made = mem.create_block("human", "Ann likes tea.", description="About the user", user_id="ann")
    assert (made["label"], made["version"], made["limit"]) == ("human", 1, 2000)
    assert mem.append_block("human", "Uses metric units.", user_id="ann")["version"] == 2
    out = mem.replace_block("human", "tea", "coffee", reason="she said so", user_id="ann")
    assert out["value"] == "Ann likes coffee.\nUses metric units."
    with pytest.raises(InvalidInputError, match="occurs 0 times"):
        mem.replace_block("human", "juice", "x", user_id="ann")
    with pytest.raises(ConflictError):
        mem.rewrite_block("human", "stale", expected_version=1, user_id="ann")
    with pytest.raises(InvalidInputError, match="limit of 2000"):
        mem.rewrite_block("human", "x" * 2001, user_id="ann")
    with pytest.raises(InvalidInputError, match="label"):
        mem.create_block("Bad Label", user_id="ann")
    with pytest.raises(NotFoundError):
        mem.block("human", user_id="bo")
    assert mem.block("human", user_id="ann")["value"] == "Ann likes coffee.\nUses metric units."
    assert [b["label"] for b in mem.blocks(user_id="ann")["results"]] == ["human"]
    ops = [e["op"] for e in mem.block_history("human", user_id="ann")["results"]]
    assert ops == ["create", "append", "replace"]

    mem.add("I moved to Porto", user_id="ann")
    pack = mem.context("where does Ann live?", user_id="ann", budget_tokens=300)
    assert pack["rendered"].startswith("## Core memory"), pack["rendered"]
    assert "human [36/2000 chars]" in pack["rendered"]
    bare = mem.context("where does Ann live?", user_id="ann", budget_tokens=300, no_blocks=True)
    assert "Core memory" not in bare["rendered"] and "Porto" in bare["rendered"]

    gone = mem.delete_block("human", user_id="ann")
    assert gone["version"] == 3
    seeded = mem.seed_block(user_id="ann")
    assert seeded["source"] == "facts" and seeded["block"]["value"] == "- I moved to Porto"


def test_async_memory_has_the_block_methods(settings: Dict[str, Any]) -> None:
    async def run() -> Any:
        m = AsyncMemory(**settings)
        await m.create_block("persona", "I plan trips.", user_id="ann", agent_id="bot")
        await m.append_block("persona", "I answer briefly.", user_id="ann", agent_id="bot")
        await m.replace_block("persona", "trips", "journeys", user_id="ann", agent_id="bot")
        await m.rewrite_block("persona", "I plan journeys.", user_id="ann", agent_id="bot")
        listed = await m.blocks(user_id="ann", agent_id="bot")
        one = await m.block("persona", user_id="ann", agent_id="bot")
        history = await m.block_history("persona", user_id="ann", agent_id="bot")
        await m.delete_block("persona", user_id="ann", agent_id="bot")
        with pytest.raises(NotFoundError):
            await m.block("persona", user_id="ann", agent_id="bot")
        return listed, one, history

    listed, one, history = asyncio.run(run())
    assert [b["label"] for b in listed["results"]] == ["persona"]
    assert one["value"] == "I plan journeys." and one["version"] == 4
    assert [e["version"] for e in history["results"]] == [1, 2, 3, 4]
