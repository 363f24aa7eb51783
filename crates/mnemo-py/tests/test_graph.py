"""The entity graph from Python, on both stores: ``search(..., graph=True)`` turns graph search
on for one call, ``relations()`` reads an entity's edges now and as of an instant, ``graph()``
walks its neighbourhood (depth 1 to 3, a limit), ``AsyncMemory`` has both, and no read crosses
scopes."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

from mnemo import AsyncMemory, InvalidInputError, Memory, NotFoundError


def said(mem: Memory, user: str, text: str, at: str) -> None:
    mem.add([{"role": "user", "name": "Cara", "content": text}], user_id=user, infer=False,
            timestamp=at)


def objects(edges: List[Dict[str, Any]], predicate: str) -> List[str]:
    return sorted(e["object"]["name"] for e in edges if e["predicate"] == predicate)


def test_search_graph_flag_turns_graph_search_on_for_one_call(mem: Memory) -> None:
    said(mem, "cara", "Ana lives in Porto.", "2023-05-01T10:00:00Z")
    said(mem, "cara", "We had dinner by the river.", "2023-05-02T10:00:00Z")
    plain = mem.search("Where does Ana live?", user_id="cara")
    assert "relations" not in plain
    assert all("via" not in h or h["via"] is None for h in plain["results"]), plain
    out = mem.search("Where does Ana live?", user_id="cara", graph=True)
    assert any(r["predicate"] == "lives_in" and r["object"]["name"] == "Porto"
               for r in out["relations"]), out
    stating = next(h for h in out["results"] if h["memory"] == "Ana lives in Porto.")
    assert stating["via"]["predicate"] == "lives_in", stating
    off = mem.search("Where does Ana live?", user_id="cara", graph=False)
    assert "relations" not in off
    with pytest.raises(TypeError, match="graph"):
        mem.search("Ana", user_id="cara", graph="yes")  # type: ignore[arg-type]


def test_relations_now_and_as_of_and_the_neighbourhood(mem: Memory) -> None:
    said(mem, "cara", "My sister Ana lives in Porto.", "2023-05-01T10:00:00Z")
    said(mem, "cara", "Ana lives in Lisbon now.", "2024-05-01T10:00:00Z")
    said(mem, "cara", "Ana works at Nokia.", "2024-05-02T10:00:00Z")
    now = mem.relations("Ana", user_id="cara")["results"]
    assert objects(now, "lives_in") == ["Lisbon"], now
    assert objects(now, "sibling_of") == ["Cara"], now
    then = mem.relations("Ana", user_id="cara", as_of="2023-12-01T00:00:00Z")["results"]
    assert objects(then, "lives_in") == ["Porto"], then
    assert len(mem.relations("Ana", user_id="cara", limit=1)["results"]) == 1

    one = mem.graph("Cara", user_id="cara")
    assert [c["name"] for c in one["center"]] == ["Cara"], one
    assert {e["predicate"] for e in one["relations"]} == {"sibling_of"}, one
    two = mem.graph("Cara", user_id="cara", depth=2)
    assert {"lives_in", "works_at"} <= {e["predicate"] for e in two["relations"]}, two
    assert {"Ana", "Lisbon", "Nokia"} <= {n["name"] for n in two["nodes"]}, two
    cut = mem.graph("Ana", user_id="cara", limit=1)
    assert len(cut["relations"]) == 1 and cut["truncated"] is True, cut
    with pytest.raises(InvalidInputError, match="depth"):
        mem.graph("Cara", user_id="cara", depth=4)
    with pytest.raises(InvalidInputError, match="depth"):
        mem.graph("Cara", user_id="cara", depth=0)


def test_graph_reads_stay_in_their_scope(mem: Memory) -> None:
    said(mem, "cara", "My sister Ana lives in Porto.", "2023-05-01T10:00:00Z")
    said(mem, "bob", "Ana lives in Oslo.", "2023-05-01T10:00:00Z")
    assert objects(mem.relations("Ana", user_id="bob")["results"], "lives_in") == ["Oslo"]
    with pytest.raises(NotFoundError):
        mem.relations("Cara", user_id="bob")
    walk = mem.graph("Ana", user_id="bob", depth=3)
    assert "Porto" not in str(walk) and "Cara" not in str(walk), walk
    found = mem.search("Where does Ana live?", user_id="bob", graph=True)
    assert "Porto" not in str(found), found


def test_async_memory_reads_the_graph(settings: Dict[str, Any]) -> None:
    async def go() -> None:
        amem = AsyncMemory(**settings)
        await amem.add([{"role": "user", "name": "Cara", "content": "Ana lives in Porto."}],
                       user_id="cara", infer=False, timestamp="2023-05-01T10:00:00Z")
        got = await amem.relations("Ana", user_id="cara")
        assert objects(got["results"], "lives_in") == ["Porto"], got
        walk = await amem.graph("Ana", user_id="cara", depth=2)
        assert [c["name"] for c in walk["center"]] == ["Ana"], walk
        assert {n["name"] for n in walk["nodes"]} == {"Porto"}, walk
        found = await amem.search("Where does Ana live?", user_id="cara", graph=True)
        assert found["relations"], found
        with pytest.raises(InvalidInputError):
            await amem.graph("Ana", user_id="cara", depth=9)
        await amem.close()

    asyncio.run(go())
