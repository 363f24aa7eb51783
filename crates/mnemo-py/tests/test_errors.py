"""Errors: one class per kind under MnemoError with kind/message/retryable; TypeError naming
the argument for a wrong type; a Rust panic arrives as InternalError; bad settings are refused
by name."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Dict

import pytest

import mnemo
from mnemo import (AsyncMemory, ConflictError, CorruptError, InternalError, InvalidInputError,
                   Memory, MnemoError, ModelOutputError, NotFoundError, RateLimitedError,
                   UnauthorizedError, UnavailableError)
from mnemo._native import _panic_probe
from conftest import models_dir


def test_every_kind_has_its_class_with_kind_and_retryable() -> None:
    table = {
        InvalidInputError: ("invalid_input", False),
        NotFoundError: ("not_found", False),
        ConflictError: ("conflict", False),
        UnauthorizedError: ("unauthorized", False),
        RateLimitedError: ("rate_limited", True),
        UnavailableError: ("unavailable", True),
        ModelOutputError: ("model_output", True),
        InternalError: ("internal", False),
        CorruptError: ("corrupt", False),
    }
    for cls, (kind, retryable) in table.items():
        assert issubclass(cls, MnemoError)
        assert (cls.kind, cls.retryable) == (kind, retryable)
        assert mnemo.errors.class_of_kind(kind) is cls
    assert issubclass(InvalidInputError, ValueError)
    assert issubclass(NotFoundError, LookupError)


def test_library_errors_arrive_as_their_class(mem: Memory) -> None:
    with pytest.raises(InvalidInputError) as e:
        mem.add("no scope given")
    assert e.value.kind == "invalid_input" and e.value.retryable is False
    assert "scope" in e.value.message or "user_id" in e.value.message
    with pytest.raises(NotFoundError) as nf:
        mem.history(str(uuid.uuid4()))
    assert nf.value.kind == "not_found" and str(nf.value) == nf.value.message
    with pytest.raises(InvalidInputError) as bad_id:
        mem.get("not-a-uuid")
    assert "memory_id" in bad_id.value.message
    with pytest.raises(InvalidInputError) as bad_filter:
        mem.search("q", user_id="u", filters={"n": {"between": 1}})
    assert bad_filter.value.kind == "invalid_input"
    # An idempotency key reused for another add is a conflict, and nothing is written.
    mem.add("first", user_id="c", idempotency_key="k1")
    with pytest.raises(ConflictError):
        mem.add("second", user_id="c", idempotency_key="k1")
    assert [m["memory"] for m in mem.get_all(user_id="c")["results"]] == ["first"]


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda m: m.add(42, user_id="u"), "messages"),
        (lambda m: m.add([{"role": "user", "content": 5}], user_id="u"), "messages[0]"),
        (lambda m: m.add(["text"], user_id="u"), "messages[0]"),
        (lambda m: m.add("x", user_id=7), "user_id"),
        (lambda m: m.add("x", user_id="u", metadata=["a"]), "metadata"),
        (lambda m: m.add("x", user_id="u", infer="yes"), "infer"),
        (lambda m: m.add("x", user_id="u", keywords="rust"), "keywords"),
        (lambda m: m.add("x", user_id="u", metadata={1: "a"}), "metadata"),
        (lambda m: m.add("x", user_id="u", timestamp=[12]), "timestamp"),
        (lambda m: m.search("q", user_id="u", limit="3"), "limit"),
        (lambda m: m.search("q", user_id="u", threshold="high"), "threshold"),
        (lambda m: m.search("q", user_id="u", include_inactive=1), "include_inactive"),
        (lambda m: m.search("q", user_id="u", filters="topic=x"), "filters"),
        (lambda m: m.import_("records"), "records"),
    ],
)
def test_wrong_types_raise_type_error_naming_the_argument(mem: Memory, call: Any, arg: str) -> None:
    with pytest.raises(TypeError) as e:
        call(mem)
    assert arg in str(e.value)
    assert mem.get_all(user_id="u")["results"] == []


def test_a_negative_count_is_invalid_input_naming_it(mem: Memory) -> None:
    with pytest.raises(InvalidInputError) as e:
        mem.search("q", user_id="u", limit=-1)
    assert "limit" in e.value.message


def test_a_rust_panic_becomes_internal_error_in_both_forms() -> None:
    with pytest.raises(InternalError) as e:
        _panic_probe().wait()
    assert "panic" in e.value.message and e.value.kind == "internal"

    async def awaited() -> None:
        await _panic_probe().future()

    with pytest.raises(InternalError):
        asyncio.run(awaited())


def test_bad_settings_are_refused_by_name(tmp_path: Any) -> None:
    with pytest.raises(InvalidInputError) as e:
        Memory(data_dir=str(tmp_path), stor={"url": "x"})
    assert "stor" in e.value.message
    with pytest.raises(InvalidInputError) as e:
        Memory.from_config({"data_dir": str(tmp_path), "tiers": {"short_term_capacity": 0}})
    assert "short_term_capacity" in e.value.message
    with pytest.raises(InvalidInputError) as e:
        Memory(data_dir=str(tmp_path), store="mysql://h/db")
    assert "store_url" in e.value.message
    with pytest.raises(InvalidInputError) as e:
        AsyncMemory(data_dir=str(tmp_path), llm={"model": "m"})
    assert "llm" in e.value.message
    with pytest.raises(TypeError):
        Memory.from_config("mnemo.toml")  # type: ignore[arg-type]


def test_an_unreachable_database_is_unavailable_and_retryable(tmp_path: Any) -> None:
    settings: Dict[str, Any] = {"data_dir": str(tmp_path), "models_dir": models_dir(),
                                "store": "postgres://mnemo@127.0.0.1:1/mnemo"}
    with pytest.raises(UnavailableError) as e:
        Memory(**settings)
    assert e.value.retryable is True and e.value.kind == "unavailable"


def test_a_missing_model_is_an_error_not_an_empty_success(tmp_path: Any) -> None:
    m = Memory(data_dir=str(tmp_path / "d"), models_dir=str(tmp_path / "no-models"))
    with pytest.raises(MnemoError) as e:
        m.add("hello", user_id="u")
    assert e.value.kind in ("unavailable", "invalid_input")
    assert m.get_all(user_id="u")["results"] == []


def deep(n: int) -> Any:
    out: Any = "leaf"
    for _ in range(n):
        out = {"k": out}
    return out


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda m: m.add("x", user_id="u", metadata={"n": float("nan")}), "metadata"),
        (lambda m: m.add("x", user_id="u", metadata={"n": float("inf")}), "metadata"),
        (lambda m: m.add("x", user_id="u", metadata={"n": 2**70}), "metadata"),
        (lambda m: m.add("x", user_id="u", metadata=deep(80)), "metadata"),
        (lambda m: m.add("x", user_id="u", timestamp="last tuesday"), "timestamp"),
        (lambda m: m.add("x", user_id="u", timestamp=float("nan")), "timestamp"),
        (lambda m: m.add("x", user_id="u", expires_at="2024-13-45"), "expires_at"),
        (lambda m: m.add("bad \ud800 text", user_id="u"), "messages"),
        (lambda m: m.add([{"role": "user", "content": "\udfff"}], user_id="u"), "messages[0].content"),
        (lambda m: m.add("x", user_id="u\ud800"), "user_id"),
        (lambda m: m.add("x", user_id="u", metadata={"\ud800": 1}), "metadata"),
        (lambda m: m.add("x", user_id="u", tags=["\ud800"]), "tags"),
        (lambda m: m.search("\ud800", user_id="u"), "query"),
        (lambda m: m.search("q", user_id="u", threshold=float("nan")), "threshold"),
        (lambda m: m.search("q", user_id="u", threshold=float("inf")), "threshold"),
        (lambda m: m.search("q", user_id="u", limit=2**70), "limit"),
        (lambda m: m.get("\ud800"), "memory_id"),
        (lambda m: m.add("x", user_id="u", session_id=""), "session_id"),
    ],
)
def test_bad_values_of_the_right_type_are_invalid_input_naming_the_argument(
    mem: Memory, call: Any, arg: str
) -> None:
    with pytest.raises(InvalidInputError) as e:
        call(mem)
    assert arg in e.value.message, e.value.message
    assert mem.get_all(user_id="u")["results"] == []


def test_a_session_written_can_be_read_and_erased(mem: Memory) -> None:
    # The empty id is refused on every path alike (add above, context and erase here).
    for call in (
        lambda: mem.context("q", user_id="u", session_id=""),
        lambda: mem.erase(session_id="", user_id="u"),
        lambda: mem.messages(user_id="u", session_id=""),
    ):
        with pytest.raises(InvalidInputError) as e:
            call()
        assert "session_id" in e.value.message


def test_erasing_a_memory_and_a_session_in_one_call_is_refused_and_erases_neither(
    mem: Memory,
) -> None:
    mid = mem.add("I keep bees on the roof", user_id="u", session_id="hive",
                  infer=False)["results"][0]["id"]
    with pytest.raises(InvalidInputError) as e:
        mem.erase(mid, session_id="hive", user_id="u")
    assert "session_id" in e.value.message and "not both" in e.value.message
    assert mem.get(mid)["memory"] == "I keep bees on the roof"
    assert mem.messages(user_id="u", session_id="hive")["results"]


def test_a_damaged_store_file_is_corrupt_error(tmp_path: Any) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "mnemo.db").write_bytes(b"this is not a database file, only text " * 200)
    with pytest.raises(CorruptError) as e:
        Memory(data_dir=str(data), models_dir=models_dir())
    assert e.value.kind == "corrupt" and e.value.retryable is False
    assert "damaged" in e.value.message
