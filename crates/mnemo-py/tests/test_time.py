"""Event time from Python: ``add(..., timestamp=)`` anchors what the text says, ``search(...,
reference_date=)`` resolves the query's time and reports it, ``timeline()`` orders by event time
(``Memory`` and ``AsyncMemory``), and a bad timestamp is a ValueError naming the field."""

from __future__ import annotations

import asyncio
from typing import Any, Dict

import pytest

from mnemo import AsyncMemory, Memory


def test_timestamp_anchors_event_time_and_search_reports_the_range(mem: Memory) -> None:
    mem.add("Kai moved to Lisbon last May", user_id="kai", infer=False,
            timestamp="2023-06-02T10:00:00Z")
    mem.add("Kai likes sardines", user_id="kai", infer=False, timestamp="2023-06-02T10:00:00Z")
    listed = mem.get_all(user_id="kai")["results"]
    moved = next(m for m in listed if "Lisbon" in m["memory"])
    assert moved["event_time"]["start"] == "2023-05-01T00:00:00Z", moved
    out = mem.search("where did Kai move in May 2023?", user_id="kai",
                     reference_date="2023-07-01T00:00:00Z")
    assert out["temporal"]["start"] == "2023-05-01T00:00:00Z", out
    assert "Lisbon" in out["results"][0]["memory"]
    plain = mem.search("sardines", user_id="kai")
    assert "temporal" not in plain


def test_a_bad_timestamp_names_the_field_and_writes_nothing(mem: Memory) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        mem.add("too old", user_id="lea", infer=False, timestamp="1850-01-01T00:00:00Z")
    assert mem.get_all(user_id="lea")["results"] == []


def test_timeline_orders_by_event_time(mem: Memory) -> None:
    mem.add("Mo started a new job yesterday", user_id="mo", infer=False,
            timestamp="2023-05-08T10:00:00Z")
    mem.add("Mo graduated in 2019", user_id="mo", infer=False, timestamp="2023-05-08T10:00:00Z")
    page = mem.timeline(user_id="mo")
    assert [e["memory"] for e in page["results"]] == [
        "Mo graduated in 2019", "Mo started a new job yesterday"]
    assert page["results"][0]["source_text"] == "Mo graduated in 2019"
    later = mem.timeline(user_id="mo", start="2023-01-01T00:00:00Z")
    assert len(later["results"]) == 1


def test_async_timeline_pages_with_a_cursor(settings: Dict[str, Any]) -> None:
    async def run() -> Any:
        amem = AsyncMemory(**settings)
        await amem.add("Ola sailed to Crete last summer", user_id="ola", infer=False,
                       timestamp="2023-05-08T10:00:00Z")
        await amem.add("Ola was born in 1990", user_id="ola", infer=False,
                       timestamp="2023-05-08T10:00:00Z")
        first = await amem.timeline(user_id="ola", limit=1)
        rest = await amem.timeline(user_id="ola", limit=1, cursor=first["next_cursor"])
        return first, rest

    first, rest = asyncio.run(run())
    assert [e["memory"] for e in first["results"]] == ["Ola was born in 1990"]
    assert [e["memory"] for e in rest["results"]] == ["Ola sailed to Crete last summer"]
