"""Drives mnemo's MCP server with the official MCP Python SDK (mcp 2.3.0) over both transports.

usage: mcp_clients.py --bin MNEMO --stdio-data DIR --url URL --alice-key K --bob-key K

  stdio: the client spawns `MNEMO --data-dir DIR mcp` itself (no key: the local admin), with
         MNEMO_MODELS_DIR / MNEMO_THREADS / MNEMO_LOG passed on from this process's environment.
  http:  streamable HTTP at URL/mcp with "Authorization: Bearer KEY"; ALICE_KEY is bound to user
         alice, BOB_KEY to user bob.

Every check is an assertion (a failure exits non-zero with a traceback on stderr). The last line
on stdout is a JSON summary that the Rust test reads.
"""

import argparse
import asyncio
import json
import os
import sys
import time

import httpx2  # mcp 2.x talks HTTP through httpx2, not httpx
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "add_memory",
    "search_memories",
    "list_memories",
    "get_memory",
    "update_memory",
    "delete_memory",
    "erase_memory",
    "erase_scope",
    "erase_session",
    "delete_all_memories",
    "memory_history",
    "get_links",
    "add_link",
    "remove_link",
    "get_context",
    "list_sessions",
    "get_session_messages",
    "get_session",
    "delete_session",
    "get_profile",
    "refresh_profile",
    "list_segments",
    "get_segment_pages",
    "get_job",
    "core_memory_list",
    "core_memory_append",
    "core_memory_replace",
    "core_memory_rewrite",
    "core_memory_seed",
    "timeline",
    "get_relations",
    "get_relations_between",
    "get_relation_history",
}
FORBIDDEN, NOT_FOUND = -32003, -32004
STEP_TIMEOUT = 120  # seconds for one transport's whole run


def log(*a):
    print(*a, file=sys.stderr, flush=True)


async def call(s: ClientSession, tool: str, args: dict):
    """Calls a tool that must succeed; returns its JSON result."""
    res = await s.call_tool(tool, args)
    text = res.content[0].text if res.content else ""
    assert not res.is_error, f"{tool}({args}) failed: {text}"
    out = json.loads(text)
    log(f"{tool}: {text[:200]}")
    return out


async def refused(s: ClientSession, tool: str, args: dict, codes=(FORBIDDEN, NOT_FOUND)):
    """Calls a tool that must fail with an MCPError of one of `codes`; returns a summary entry."""
    try:
        res = await s.call_tool(tool, args)
    except MCPError as e:
        assert e.code in codes, f"{tool}({args}): code {e.code} not in {codes}: {e.message}"
        kind = e.data.get("kind") if isinstance(e.data, dict) else None
        assert kind in ("forbidden", "not_found", "unauthorized"), f"{tool}: data {e.data!r}"
        log(f"{tool} refused: {e.code} {kind} {e.message}")
        return {"tool": tool, "code": e.code, "kind": kind}
    text = res.content[0].text if res.content else ""
    raise AssertionError(f"{tool}({args}) was not refused (is_error={res.is_error}): {text}")


async def check_tools(s: ClientSession):
    listed = (await s.list_tools()).tools
    names = sorted(t.name for t in listed)
    assert set(names) == TOOLS and len(names) == len(TOOLS), names
    for t in listed:
        assert isinstance(t.input_schema, dict), (t.name, t.input_schema)
        assert t.input_schema.get("type") == "object", (t.name, t.input_schema)
        assert t.description, t.name
    props = {t.name: set(t.input_schema.get("properties", {})) for t in listed}
    assert {"text", "user_id"} <= props["add_memory"], props["add_memory"]
    assert {"query", "user_id"} <= props["search_memories"], props["search_memories"]
    assert "memory_id" in props["get_memory"], props["get_memory"]
    assert {"memory_id", "to", "strength"} <= props["add_link"], props["add_link"]
    assert {"query", "budget_tokens", "session_id"} <= props["get_context"], props["get_context"]
    return names


async def lifecycle(s: ClientSession, user: str) -> dict:
    """The tools a client uses, on `user`'s scope: add, search, list, get, update, history,
    links, context; `finish` then unlinks, deletes (then get fails) and deletes all. Returns the
    summary of this transport."""
    init = await s.initialize()
    assert init.server_info.name == "mnemo", init.server_info
    names = await check_tools(s)

    added = await call(s, "add_memory", {"text": "I moved to Lisbon last spring", "user_id": user})
    assert len(added["results"]) == 1 and added["results"][0]["event"] == "ADD", added
    mid = added["results"][0]["id"]
    other = await call(s, "add_memory", {"text": "My favourite food is ramen", "user_id": user})
    oid = other["results"][0]["id"]

    found = await call(s, "search_memories", {"query": "where does the user live?", "user_id": user})
    assert found["results"], found
    assert found["results"][0]["id"] == mid, found["results"]
    assert "Lisbon" in found["results"][0]["memory"]

    listed = await call(s, "list_memories", {"user_id": user})
    assert sorted(m["id"] for m in listed["results"]) == sorted([mid, oid]), listed

    got = await call(s, "get_memory", {"memory_id": mid})
    assert got["id"] == mid and got["memory"] == "I moved to Lisbon last spring", got
    assert got["user_id"] == user, got

    await call(s, "update_memory", {"memory_id": mid, "text": "I moved to Porto"})
    got = await call(s, "get_memory", {"memory_id": mid, "user_id": user})
    assert got["memory"] == "I moved to Porto", got
    hist = await call(s, "memory_history", {"memory_id": mid})
    events = [h["event"] for h in hist["results"]]
    assert events == ["ADD", "UPDATE"], hist

    linked = await call(s, "add_link", {"memory_id": mid, "to": oid, "reason": "both about the user"})
    assert [l["to"] for l in linked["results"]] == [oid], linked
    seen = await call(s, "get_links", {"memory_id": oid})
    assert [(l["from"], l["author"]) for l in seen["results"]] == [(mid, "caller")], seen

    pack = await call(s, "get_context", {"query": "where does the user live?", "budget_tokens": 200, "user_id": user})
    assert pack["budget_tokens"] == 200 and 0 < pack["used_tokens"] <= 200, pack
    assert "Porto" in pack["rendered"], pack

    blocks = await core_memory(s, user)

    return {
        "blocks": blocks,
        "server": init.server_info.name,
        "protocol": init.protocol_version,
        "tools": names,
        "memory_id": mid,
        "other_id": oid,
        "history_events": events,
    }


async def rejected(s: ClientSession, tool: str, args: dict) -> dict:
    """Calls a tool that must fail; returns its code, kind and message."""
    try:
        res = await s.call_tool(tool, args)
    except MCPError as e:
        kind = e.data.get("kind") if isinstance(e.data, dict) else None
        log(f"{tool} rejected: {e.code} {kind} {e.message}")
        return {"code": e.code, "kind": kind, "message": e.message}
    raise AssertionError(f"{tool}({args}) was not rejected: {res}")


async def core_memory(s: ClientSession, user: str) -> dict:
    """The core memory tools on `user`'s scope: seed the `human` block from what the user said,
    list, append, replace (ambiguous: refused), rewrite with a stale version (conflict), and the
    pack starting with the block."""
    seeded = await call(s, "core_memory_seed", {"user_id": user})
    assert seeded["source"] == "facts" and "ramen" in seeded["block"]["value"], seeded
    listed = await call(s, "core_memory_list", {"user_id": user})
    assert [b["label"] for b in listed["results"]] == ["human"], listed
    v = listed["results"][0]["version"]
    appended = await call(s, "core_memory_append", {
        "label": "human", "text": "Prefers metric units.", "expected_version": v,
        "reason": "stated in chat", "user_id": user})
    assert appended["version"] == v + 1 and appended["value"].endswith("Prefers metric units."), appended
    replaced = await call(s, "core_memory_replace", {
        "label": "human", "old": "metric", "new": "imperial", "user_id": user})
    assert "Prefers imperial units." in replaced["value"], replaced
    await call(s, "core_memory_append", {"label": "human", "text": "units units", "user_id": user})
    ambiguous = await rejected(s, "core_memory_replace", {
        "label": "human", "old": "units", "new": "x", "user_id": user})
    assert ambiguous["kind"] == "invalid_input" and "occurs 3 times" in ambiguous["message"], ambiguous
    stale = await rejected(s, "core_memory_rewrite", {
        "label": "human", "value": "lost update", "expected_version": v, "user_id": user})
    assert stale["kind"] == "conflict", stale
    too_long = await rejected(s, "core_memory_rewrite", {
        "label": "human", "value": "x" * 2001, "user_id": user})
    assert too_long["kind"] == "invalid_input" and "limit of 2000" in too_long["message"], too_long
    rewritten = await call(s, "core_memory_rewrite", {
        "label": "human", "value": "Lives in Porto. Prefers imperial units.", "user_id": user})
    pack = await call(s, "get_context", {"query": "ramen", "budget_tokens": 300, "user_id": user})
    assert pack["rendered"].startswith("## Core memory"), pack["rendered"]
    assert "Lives in Porto. Prefers imperial units." in pack["rendered"], pack
    bare = await call(s, "get_context", {"query": "ramen", "budget_tokens": 300, "user_id": user, "no_blocks": True})
    assert "Core memory" not in bare["rendered"], bare
    return {"version": rewritten["version"], "value": rewritten["value"],
            "ambiguous_code": ambiguous["code"], "conflict_code": stale["code"]}


async def finish(s: ClientSession, user: str, summary: dict) -> None:
    mid, oid = summary["memory_id"], summary["other_id"]
    unlinked = await call(s, "remove_link", {"memory_id": mid, "to": oid})
    assert unlinked == {"removed": {"from": mid, "to": oid}}, unlinked
    seen = await call(s, "get_links", {"memory_id": mid})
    assert seen["results"] == [], seen
    deleted = await call(s, "delete_memory", {"memory_id": mid})
    assert deleted == {"deleted": mid}, deleted
    gone = await refused(s, "get_memory", {"memory_id": mid}, (NOT_FOUND,))
    summary["get_after_delete"] = gone
    listed = await call(s, "list_memories", {"user_id": user})
    assert [m["id"] for m in listed["results"]] == [oid], listed
    cleared = await call(s, "delete_all_memories", {"user_id": user})
    assert cleared == {"deleted": 1}, cleared
    listed = await call(s, "list_memories", {"user_id": user})
    assert listed["results"] == [], listed
    summary["left_after_delete_all"] = len(listed["results"])


async def run_stdio(binary: str, data_dir: str) -> dict:
    env = {k: os.environ[k] for k in ("MNEMO_MODELS_DIR", "MNEMO_THREADS", "MNEMO_LOG") if k in os.environ}
    params = StdioServerParameters(command=binary, args=["--data-dir", data_dir, "mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            summary = await lifecycle(s, "alice")
            await finish(s, "alice", summary)
    return summary


def http_client(key):
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))


async def run_http(url: str, alice_key: str, bob_key: str) -> dict:
    mcp_url = url.rstrip("/") + "/mcp"
    async with http_client(alice_key) as alice_http:
        async with streamable_http_client(mcp_url, http_client=alice_http) as (ar, aw):
            async with ClientSession(ar, aw) as alice:
                summary = await lifecycle(alice, "alice")
                mid, oid = summary["memory_id"], summary["other_id"]

                # bob, on his own session, against alice's memory and scope: each tool refused
                async with http_client(bob_key) as bob_http:
                    async with streamable_http_client(mcp_url, http_client=bob_http) as (br, bw):
                        async with ClientSession(br, bw) as bob:
                            await bob.initialize()
                            assert sorted(t.name for t in (await bob.list_tools()).tools) == sorted(TOOLS)
                            attempts = [
                                ("add_memory", {"text": "bob was here", "user_id": "alice"}),
                                ("search_memories", {"query": "Porto", "user_id": "alice"}),
                                ("list_memories", {"user_id": "alice"}),
                                ("get_memory", {"memory_id": mid}),
                                ("get_memory", {"memory_id": mid, "user_id": "alice"}),
                                ("update_memory", {"memory_id": mid, "text": "bob was here"}),
                                ("update_memory", {"memory_id": mid, "user_id": "alice", "text": "bob was here"}),
                                ("delete_memory", {"memory_id": mid}),
                                ("delete_memory", {"memory_id": mid, "user_id": "alice"}),
                                ("erase_memory", {"memory_id": mid}),
                                ("erase_memory", {"memory_id": mid, "user_id": "alice"}),
                                ("delete_all_memories", {"user_id": "alice"}),
                                ("erase_session", {"session_id": "s1", "user_id": "alice"}),
                                ("erase_scope", {"user_id": "alice", "confirm": True}),
                                ("memory_history", {"memory_id": mid}),
                                ("memory_history", {"memory_id": mid, "user_id": "alice"}),
                                ("get_links", {"memory_id": mid}),
                                ("get_links", {"memory_id": mid, "user_id": "alice"}),
                                ("add_link", {"memory_id": mid, "to": oid}),
                                ("add_link", {"memory_id": mid, "to": oid, "user_id": "alice"}),
                                ("remove_link", {"memory_id": mid, "to": oid}),
                                ("remove_link", {"memory_id": mid, "to": oid, "user_id": "alice"}),
                                ("get_context", {"query": "Porto", "budget_tokens": 200, "user_id": "alice"}),
                                ("list_sessions", {"user_id": "alice"}),
                                ("get_session_messages", {"session_id": "s1", "user_id": "alice"}),
                                ("get_session", {"session_id": "s1", "user_id": "alice"}),
                                ("delete_session", {"session_id": "s1", "user_id": "alice"}),
                                ("get_profile", {"user_id": "alice"}),
                                ("refresh_profile", {"user_id": "alice"}),
                                ("list_segments", {"user_id": "alice"}),
                                ("get_segment_pages", {"segment_id": mid, "user_id": "alice"}),
                                ("get_job", {"job_id": "00000000-0000-0000-0000-000000000000"}),
                                ("core_memory_list", {"user_id": "alice"}),
                                ("core_memory_append", {"label": "human", "text": "bob", "user_id": "alice"}),
                                ("core_memory_replace", {"label": "human", "old": "Porto", "new": "bob", "user_id": "alice"}),
                                ("core_memory_rewrite", {"label": "human", "value": "bob", "user_id": "alice"}),
                                ("core_memory_seed", {"user_id": "alice"}),
                                ("timeline", {"user_id": "alice"}),
                                ("get_relations", {"entity": "Porto", "user_id": "alice"}),
                                ("get_relations_between", {"a": "alice", "b": "Porto", "user_id": "alice"}),
                                ("get_relation_history", {"relation_id": mid, "user_id": "alice"}),
                                # bob's own scope: alice's label answers as a missing one
                                ("core_memory_append", {"label": "human", "text": "bob"}),
                            ]
                            denied = [await refused(bob, tool, args) for tool, args in attempts]
                            assert {d["tool"] for d in denied} == TOOLS
                            # bob's own scope is empty and his search does not reach alice
                            mine = await call(bob, "list_memories", {"user_id": "bob"})
                            assert mine["results"] == [], mine
                            hits = await call(bob, "search_memories", {"query": "Porto", "user_id": "bob"})
                            assert hits["results"] == [], hits
                summary["cross_tenant"] = denied

                # alice's memory is untouched
                got = await call(alice, "get_memory", {"memory_id": mid})
                assert got["memory"] == "I moved to Porto", got
                hist = await call(alice, "memory_history", {"memory_id": mid})
                assert [h["event"] for h in hist["results"]] == ["ADD", "UPDATE"], hist
                listed = await call(alice, "list_memories", {"user_id": "alice"})
                assert len(listed["results"]) == 2, listed
                seen = await call(alice, "get_links", {"memory_id": mid})
                assert [l["to"] for l in seen["results"]] == [oid], seen
                blocks = await call(alice, "core_memory_list", {"user_id": "alice"})
                assert [b["value"] for b in blocks["results"]] == [summary["blocks"]["value"]], blocks
                summary["unchanged_after_cross_tenant"] = True

                await finish(alice, "alice", summary)

    # No key, or a wrong one: the session cannot even initialize.
    rejected = {}
    for name, key in (("no_key", None), ("wrong_key", "mnemo_not_a_real_key")):
        rejected[name] = await initialize_fails(mcp_url, key)
    summary["rejected"] = rejected
    return summary


async def initialize_fails(mcp_url: str, key) -> dict:
    """Opens a session with `key` (None: no Authorization header); initialize must fail.
    Returns how it failed."""
    outcome = None
    try:
        async with http_client(key) as http:
            async with streamable_http_client(mcp_url, http_client=http) as (r, w):
                async with ClientSession(r, w) as s:
                    try:
                        await asyncio.wait_for(s.initialize(), 30)
                    except MCPError as e:
                        outcome = f"MCPError {e.code}: {e.message}"
                    except asyncio.TimeoutError:
                        outcome = None  # hanging is not refusing: fails below
                    else:
                        raise AssertionError(f"initialize succeeded with key {key!r}")
    except AssertionError:
        raise
    except BaseException as e:  # transport errors escape as (nested) exception groups
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        outcome = outcome or f"{type(e).__name__}: {e}"
    assert outcome, f"initialize with key {key!r} neither failed nor succeeded"
    # The SDK hides the HTTP status (-32603 for any error response): the raw POST shows it.
    async with http_client(key) as http:
        raw = await http.post(
            mcp_url,
            headers={"Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            },
        )
    assert raw.status_code == 401, (raw.status_code, raw.text)
    log(f"initialize with key {key!r} refused: {outcome}; raw POST: {raw.status_code}")
    return {"error": outcome, "status": raw.status_code}


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--stdio-data", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--alice-key", required=True)
    p.add_argument("--bob-key", required=True)
    a = p.parse_args()

    out = {"sdk": "mcp"}
    t0 = time.monotonic()
    out["stdio"] = await asyncio.wait_for(run_stdio(a.bin, a.stdio_data), STEP_TIMEOUT)
    out["stdio"]["seconds"] = round(time.monotonic() - t0, 2)
    t1 = time.monotonic()
    out["http"] = await asyncio.wait_for(run_http(a.url, a.alice_key, a.bob_key), STEP_TIMEOUT)
    out["http"]["seconds"] = round(time.monotonic() - t1, 2)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
