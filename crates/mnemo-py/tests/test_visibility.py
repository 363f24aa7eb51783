"""Every Python read keeps the library's visibility rule, on SQLite and PostgreSQL, through
``Memory`` and ``AsyncMemory``: turns that were deleted, expired or erased (one memory, a whole
session with ``erase(session_id=)``, a scope with ``delete_all``) come back on no read path —
``messages``, ``get``, ``get_all``, ``search``, ``context`` — and the log shows no empty entry
where an erased turn was. ``history`` and ``export`` are the audit trail and the backup: they
keep a deleted or expired memory (as the library's do, so a restore is whole), and hold no
byte of an erased one."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

from mnemo import AsyncMemory, Memory

KEPT = "Vera keeps a kestrel named Pip."
DELETED = "Vera once owned a violet tandem bicycle."
EXPIRED = "Vera's locker code is marmalade seven."
ERASED = "Vera whispered the quokka password."
SESSION_ERASED = "Vera planned a zeppelin picnic."
SCOPE_DELETED = "Walt collects brass sextants."
HIDDEN = [DELETED, EXPIRED, ERASED, SESSION_ERASED, SCOPE_DELETED]
ERASED_TEXTS = [ERASED, SESSION_ERASED]
# The audit trail and the backup: erased text only is gone from them.
AUDIT = ("history_erased", "history_session", "export")
# Words of the hidden turns that no kept text holds: a search for them must find nothing.
HIDDEN_WORDS = ["tandem", "marmalade", "quokka", "zeppelin", "sextants"]


def one(out: Dict[str, Any]) -> str:
    ids = [r["id"] for r in out["results"]]
    assert len(ids) == 1, out
    return str(ids[0])


def hide_turns(m: Memory) -> Dict[str, str]:
    """Writes the turns and hides all but one; returns the ids of the hidden memories."""
    turn = lambda text: [{"role": "user", "content": text}]  # noqa: E731
    m.add(turn(KEPT), user_id="vera", session_id="s1", infer=False)
    ids = {
        "deleted": one(m.add(turn(DELETED), user_id="vera", session_id="s1", infer=False)),
        "expired": one(m.add(turn(EXPIRED), user_id="vera", session_id="s1", infer=False)),
        "erased": one(m.add(turn(ERASED), user_id="vera", session_id="s1", infer=False)),
        "session": one(m.add(turn(SESSION_ERASED), user_id="vera", session_id="s2", infer=False)),
        "scope": one(m.add(turn(SCOPE_DELETED), user_id="walt", session_id="w1", infer=False)),
    }
    m.delete(ids["deleted"])
    m.update(ids["expired"], expires_at="2000-01-01T00:00:00Z")
    m.erase(ids["erased"])
    m.erase(session_id="s2", user_id="vera")
    m.delete_all(user_id="walt")
    return ids


def check(reads: Dict[str, Any]) -> None:
    for path, value in reads.items():
        dumped = json.dumps(value)
        for text in ERASED_TEXTS if path in AUDIT else HIDDEN:
            assert text not in dumped, f"{path} shows a hidden turn: {text!r}"
    for path in ("messages", "messages_s1", "messages_s2", "messages_walt"):
        for msg in reads[path]["results"]:
            assert msg["content"].strip(), f"{path} shows an empty entry: {msg}"
    assert [m["content"] for m in reads["messages"]["results"]] == [KEPT]
    assert [m["content"] for m in reads["messages_s1"]["results"]] == [KEPT]
    assert reads["messages_s2"]["results"] == []
    assert reads["messages_walt"]["results"] == []
    assert [m["memory"] for m in reads["get_all"]["results"]] == [KEPT]
    assert reads["get_all_walt"]["results"] == []
    for key in ("get_deleted", "get_expired", "get_erased", "get_session", "get_scope"):
        assert reads[key] is None, f"{key}: {reads[key]}"
    for word in HIDDEN_WORDS:
        hits = reads[f"search_{word}"]["results"]
        assert all(h["memory"] == KEPT for h in hits), f"search {word!r}: {hits}"
    assert KEPT in reads["context"]["rendered"]


def reads_of(m: Memory, ids: Dict[str, str]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "messages": m.messages(user_id="vera"),
        "messages_s1": m.messages(user_id="vera", session_id="s1"),
        "messages_s2": m.messages(user_id="vera", session_id="s2"),
        "messages_walt": m.messages(user_id="walt"),
        "get_all": m.get_all(user_id="vera"),
        "get_all_walt": m.get_all(user_id="walt"),
        "context": m.context("what does Vera keep?", user_id="vera", session_id="s1"),
        "history_erased": m.history(ids["erased"]),
        "history_session": m.history(ids["session"]),
        "export": m.export(),
    }
    for key, id_ in ids.items():
        out[f"get_{key}"] = m.get(id_)
    for word in HIDDEN_WORDS:
        out[f"search_{word}"] = m.search(word, user_id="vera", threshold=0)
    return out


def test_every_read_keeps_the_rule(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    ids = hide_turns(m)
    check(reads_of(m, ids))


def test_async_reads_keep_the_rule(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    ids = hide_turns(m)
    m.close()

    async def go() -> Dict[str, Any]:
        async with AsyncMemory(**settings) as am:
            out: Dict[str, Any] = {
                "messages": await am.messages(user_id="vera"),
                "messages_s1": await am.messages(user_id="vera", session_id="s1"),
                "messages_s2": await am.messages(user_id="vera", session_id="s2"),
                "messages_walt": await am.messages(user_id="walt"),
                "get_all": await am.get_all(user_id="vera"),
                "get_all_walt": await am.get_all(user_id="walt"),
                "context": await am.context("what does Vera keep?", user_id="vera"),
                "history_erased": await am.history(ids["erased"]),
                "history_session": await am.history(ids["session"]),
                "export": await am.export(),
            }
            for key, id_ in ids.items():
                out[f"get_{key}"] = await am.get(id_)
            for word in HIDDEN_WORDS:
                out[f"search_{word}"] = await am.search(word, user_id="vera", threshold=0)
            return out

    check(asyncio.run(go()))


def test_hidden_turns_do_not_use_up_the_limit(settings: Dict[str, Any]) -> None:
    m = Memory(**settings)
    m.add([{"role": "user", "content": "first kept turn"}], user_id="ula", infer=False)
    hidden: List[str] = []
    for i in range(5):
        out = m.add([{"role": "user", "content": f"hidden turn {i}"}], user_id="ula", infer=False)
        hidden.append(one(out))
    for id_ in hidden:
        m.delete(id_)
    got = m.messages(user_id="ula", limit=1)["results"]
    assert [r["content"] for r in got] == ["first kept turn"]
