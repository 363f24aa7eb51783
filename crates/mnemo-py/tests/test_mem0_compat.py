"""Mem0 2.x's call forms and mnemo's write records through the package, on SQLite and
PostgreSQL: ``update(text=, expiration_date=)``, the wildcard filter and ``icontains``,
``show_expired=``/``rerank=``, ``get`` of a missing id, history rows with the writer, the
reason and Mem0's fields, ``sessions()`` with cursors, and the default search threshold."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

import pytest

from mnemo import DEFAULT_THRESHOLD, AsyncMemory, InvalidInputError, Memory


def first_id(out: Dict[str, Any]) -> str:
    return str(out["results"][0]["id"])


def test_update_takes_text_and_expiration_date(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    mid = first_id(m.add("I live in Lyon.", user_id="ann", infer=False))
    out = m.update(mid, text="I live in Porto.", reason="moved")
    assert out["memory"] == "I live in Porto."
    m.update(mid, data="I live in Braga.")
    got = m.get(mid)
    assert got is not None and got["memory"] == "I live in Braga."
    with pytest.raises(InvalidInputError, match="text"):
        m.update(mid, "one", text="two")
    m.update(mid, expiration_date="2001-02-03")
    assert m.get(mid) is None, "expired: gone from reads"
    shown = m.get(mid, show_expired=True)
    assert shown is not None and shown["expires_at"].startswith("2001-02-03T00:00:00")
    assert [r["id"] for r in m.get_all(user_id="ann", show_expired=True)["results"]] == [mid]
    assert m.get_all(user_id="ann")["results"] == []
    hits = m.search("Braga", user_id="ann", show_expired=True, rerank=True)["results"]
    assert [h["id"] for h in hits] == [mid]
    with pytest.raises(TypeError):
        m.search("Braga", user_id="ann", rerank="yes")  # type: ignore[arg-type]


def test_get_of_a_missing_memory_is_none(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    mid = first_id(m.add("owned by bo", user_id="bo", infer=False))
    assert m.get("00000000-0000-7000-8000-000000000000") is None
    assert m.get(mid, user_id="someone-else") is None
    with pytest.raises(InvalidInputError, match="memory_id"):
        m.get("not-an-id")

    async def go() -> None:
        async with AsyncMemory(**settings) as am:
            assert await am.get("00000000-0000-7000-8000-000000000000") is None

    asyncio.run(go())


def test_wildcard_and_icontains_filters(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    a = first_id(m.add("alpha", user_id="cat", infer=False, metadata={"team": "Red Barons"}))
    b = first_id(m.add("beta", user_id="cat", infer=False, metadata={"other": 1}))
    c = first_id(m.add("gamma", user_id="cat", infer=False, metadata={"team": "blue"}))
    ids = lambda out: sorted(r["id"] for r in out["results"])  # noqa: E731
    assert ids(m.get_all(user_id="cat", filters={"team": "*"})) == sorted([a, c])
    assert ids(m.get_all(user_id="cat", filters={"team": {"icontains": "red b"}})) == [a]
    assert ids(m.get_all(filters={"user_id": "cat", "other": "*"})) == [b]
    hits = m.search("alpha", user_id="cat", filters={"team": {"icontains": "BARON"}}, threshold=0)
    assert ids(hits) == [a]


def test_history_names_the_writer_and_the_reason(settings: Dict[str, Any]) -> None:
    m = Memory(**settings, actor="planner")
    mid = first_id(m.add("draft plan", user_id="dan", infer=False))
    m.update(mid, text="final plan", reason="reviewed")
    m.delete(mid, reason="done with it")
    rows = m.history(mid)
    assert [r["event"] for r in rows] == ["ADD", "UPDATE", "DELETE"]
    assert {r["actor"] for r in rows} == {"python:planner"}
    assert [r["actor_id"] for r in rows] == [r["actor"] for r in rows]
    assert [r["reason"] for r in rows][1:] == ["reviewed", "done with it"]
    assert [r["is_deleted"] for r in rows] == [False, False, True]
    assert all(r["updated_at"] == r["created_at"] for r in rows)
    plain = Memory(**{**settings, "data_dir": settings["data_dir"]})
    other = first_id(plain.add("x", user_id="dan2", infer=False))
    plain.delete_all(user_id="dan2", reason="cleanup")
    assert [(r["actor"], r["reason"]) for r in plain.history(other)] == [
        ("python", None),
        ("python", "cleanup"),
    ]


def test_sessions_are_listed_with_cursors(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    for s in ("s1", "s2", "s3"):
        m.add([{"role": "user", "content": f"hello from {s}"}], user_id="eve", session_id=s, infer=False)
    page = m.sessions(user_id="eve", limit=2)
    assert [s["session_id"] for s in page["results"]] == ["s1", "s2"]
    rest = m.sessions(user_id="eve", limit=2, cursor=page["next_cursor"])
    assert [s["session_id"] for s in rest["results"]] == ["s3"]
    assert "next_cursor" not in rest
    assert rest["results"][0]["messages"] == 1
    assert m.sessions(user_id="nobody")["results"] == []

    async def go() -> None:
        async with AsyncMemory(**settings) as am:
            out = await am.sessions(user_id="eve")
            assert [s["session_id"] for s in out["results"]] == ["s1", "s2", "s3"]

    asyncio.run(go())


def test_search_drops_hits_under_the_default_threshold(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    m.add("My sister Maria plays the cello.", user_id="fay", infer=False)
    m.add("Quarterly tax forms are due in April.", user_id="fay", infer=False)
    every = m.search("cello music", user_id="fay", threshold=0)["results"]
    assert len(every) == 2
    kept = m.search("cello music", user_id="fay")["results"]
    assert [h["memory"] for h in kept] == ["My sister Maria plays the cello."]
    assert all(h["score"] >= DEFAULT_THRESHOLD for h in kept)
    assert any(h["score"] < DEFAULT_THRESHOLD for h in every)
