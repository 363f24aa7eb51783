"""Drives a running `mnemo serve` with the official Mem0 Python SDK (mem0ai 2.2.1), unchanged.

usage: mem0_sdk.py URL ALICE_KEY BOB_KEY
  URL        the server's base URL (http://127.0.0.1:PORT), given to MemoryClient(host=...)
  ALICE_KEY  an API key bound to user "alice"
  BOB_KEY    an API key bound to user "bob"

Every check is an assertion (a failure exits non-zero with a traceback on stderr). The last line
on stdout is a JSON summary that the Rust test reads.
"""

import json
import os
import sys
import tempfile
import time

# Both are read once, when mem0 is imported: no telemetry (it would try the internet and add
# seconds at exit), and the SDK's config file goes to a temporary folder, not ~/.mem0.
os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0dir-"))

from mem0 import MemoryClient  # noqa: E402
from mem0.exceptions import AuthenticationError, MemoryError, MemoryNotFoundError  # noqa: E402


def status_of(e: MemoryError):
    return (getattr(e, "debug_info", None) or {}).get("status_code")


def refused(what, call, allowed=(403, 404)):
    """Runs `call`, which must raise a mem0 exception for one of the `allowed` HTTP statuses.
    Returns {"call", "error", "status"} for the summary."""
    try:
        out = call()
    except (MemoryNotFoundError, AuthenticationError) as e:
        st = status_of(e)
        assert st in allowed, f"{what}: status {st} not in {allowed}: {e!r}"
        if isinstance(e, MemoryNotFoundError):
            assert st == 404, f"{what}: {e!r}"
        return {"call": what, "error": type(e).__name__, "status": st}
    except MemoryError as e:
        raise AssertionError(f"{what}: unexpected mem0 error {e!r}") from e
    raise AssertionError(f"{what}: expected a refusal, got {out!r}")


class HttpApi:
    """mnemo's native routes with the same key, for what the Mem0 SDK has no call for."""

    def __init__(self, url, key):
        self.url, self.key = url, key

    def _call(self, method, path, body=None):
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def get(self, path):
        return self._call("GET", path)

    def post(self, path, body):
        return self._call("POST", path, body)


def ids_of(page):
    return [m["id"] for m in page["results"]]


def main() -> None:
    url, alice_key, bob_key = sys.argv[1], sys.argv[2], sys.argv[3]
    t0 = time.monotonic()
    summary = {"sdk": "mem0ai", "steps": []}

    def step(name, value=None):
        summary["steps"].append(name)
        print(f"{name}: {json.dumps(value, default=str)[:300]}", file=sys.stderr)

    # Construction pings GET /v1/ping/ with "Authorization: Token KEY".
    alice = MemoryClient(api_key=alice_key, host=url)
    bob = MemoryClient(api_key=bob_key, host=url)

    # A wrong key is refused at construction (the SDK turns the ping's 401 into ValueError).
    try:
        MemoryClient(api_key="mnemo_not_a_real_key", host=url)
        raise AssertionError("a wrong API key was accepted")
    except ValueError as e:
        summary["bad_key"] = str(e)

    # add (no chat model on the server: infer=False stores the messages as they are)
    added = alice.add(
        [
            {"role": "user", "content": "I moved to Lisbon last spring"},
            {"role": "assistant", "content": "Nice! How do you like it?"},
        ],
        user_id="alice",
        metadata={"topic": "home"},
        infer=False,
    )
    step("add", added)
    assert isinstance(added, dict) and added.get("results"), added
    assert all(r["event"] == "ADD" for r in added["results"]), added
    lisbon = [r for r in added["results"] if "Lisbon" in r["memory"]]
    assert len(lisbon) == 1, added
    mid = lisbon[0]["id"]
    other = alice.add("My favourite food is ramen", user_id="alice", infer=False)
    step("add2", other)
    assert other["results"] and other["results"][0]["event"] == "ADD", other
    added_ids = ids_of(added) + ids_of(other)

    # search: the Lisbon memory is the best match for a question about where alice lives
    found = alice.search("where does alice live?", filters={"user_id": "alice"}, top_k=5)
    step("search", found)
    hits = found["results"]
    assert hits, found
    assert hits[0]["id"] == mid, f"best hit is not the Lisbon memory: {hits}"
    assert "Lisbon" in hits[0]["memory"]
    assert isinstance(hits[0]["score"], (int, float))
    assert all(h["user_id"] == "alice" for h in hits), hits

    # get_all: every memory added, and nothing else
    page = alice.get_all(filters={"user_id": "alice"})
    step("get_all", page)
    assert sorted(ids_of(page)) == sorted(added_ids), page
    assert page.get("count", len(page["results"])) == len(added_ids), page

    # get
    got = alice.get(mid)
    step("get", got)
    assert got["id"] == mid and got["memory"] == "I moved to Lisbon last spring", got
    assert got["user_id"] == "alice", got
    assert got["metadata"].get("topic") == "home", got

    # update changes the text
    upd = alice.update(mid, text="I moved to Porto")
    step("update", upd)
    got = alice.get(mid)
    assert got["memory"] == "I moved to Porto", got

    # history: ADD, then UPDATE with the old and the new text
    hist = alice.history(mid)
    step("history", hist)
    assert isinstance(hist, list), hist
    events = [h["event"] for h in hist]
    assert events == ["ADD", "UPDATE"], events
    assert hist[1]["old_memory"] == "I moved to Lisbon last spring", hist
    assert hist[1]["new_memory"] == "I moved to Porto", hist
    assert all(h["memory_id"] == mid for h in hist), hist

    # Cross-tenant: bob's key on alice's memory and scope is refused, with mem0's own exceptions.
    denied = [
        refused("get", lambda: bob.get(mid)),
        refused("update", lambda: bob.update(mid, text="bob was here")),
        refused("history", lambda: bob.history(mid)),
        refused("delete", lambda: bob.delete(mid)),
        refused("search", lambda: bob.search("Porto", filters={"user_id": "alice"}), (403,)),
        refused("get_all", lambda: bob.get_all(filters={"user_id": "alice"}), (403,)),
        refused("delete_all", lambda: bob.delete_all(user_id="alice"), (403,)),
    ]
    step("cross_tenant", denied)
    summary["cross_tenant"] = denied
    # bob's own scope is empty, and his searches do not reach alice's memories
    bob_page = bob.get_all(filters={"user_id": "bob"})
    assert bob_page["results"] == [], bob_page
    bob_hits = bob.search("Porto", filters={"user_id": "bob"})
    assert bob_hits["results"] == [], bob_hits

    # ... and alice's memory is unchanged (checked with alice's key)
    got = alice.get(mid)
    assert got["memory"] == "I moved to Porto", got
    assert [h["event"] for h in alice.history(mid)] == ["ADD", "UPDATE"]
    assert sorted(ids_of(alice.get_all(filters={"user_id": "alice"}))) == sorted(added_ids)
    step("unchanged_after_cross_tenant")

    # delete one: it is gone for get (404) and from the list
    deleted = alice.delete(mid)
    step("delete", deleted)
    assert isinstance(deleted, dict), deleted
    gone = refused("get_after_delete", lambda: alice.get(mid), (404,))
    summary["get_after_delete"] = gone
    left = ids_of(alice.get_all(filters={"user_id": "alice"}))
    assert mid not in left and len(left) == len(added_ids) - 1, left

    # delete_all: nothing left
    cleared = alice.delete_all(user_id="alice")
    step("delete_all", cleared)
    assert isinstance(cleared, dict), cleared
    after = alice.get_all(filters={"user_id": "alice"})
    step("get_all_after", after)
    assert after["results"] == [], after
    assert alice.search("Porto", filters={"user_id": "alice"})["results"] == []

    # run_id is a session: the SDK's run shows up in mnemo's session log, a context pack of
    # the session sees it, and a session erase removes it (read and erased over plain HTTP,
    # since the SDK has no sessions).
    run = alice.add(
        [
            {"role": "user", "content": [{"type": "text", "text": "My train leaves at 7:40 Zx4410"}]},
            {"role": "assistant", "content": "Noted."},
        ],
        user_id="alice",
        run_id="commute",
        infer=False,
    )
    step("add_run", run)
    assert run["results"], run
    http = HttpApi(url, alice_key)
    sessions = http.get("/v1/sessions?user_id=alice&run_id=commute")
    assert [x["session_id"] for x in sessions["sessions"]] == ["commute"], sessions
    log = http.get("/v1/sessions/commute/messages?user_id=alice&run_id=commute")
    assert [m["text"] for m in log["messages"]] == ["My train leaves at 7:40 Zx4410", "Noted."], log
    pack = http.post("/v1/context", {"query": "when does my train leave?", "budget_tokens": 400,
                                     "user_id": "alice", "run_id": "commute", "session_id": "commute"})
    assert "Zx4410" in pack["rendered"], pack
    assert any(s["section"] == "short_term" and s["items"] for s in pack["sections"]), pack
    erased = http.post("/v1/sessions/commute/erase", {"user_id": "alice", "run_id": "commute"})
    assert erased["messages_erased"] == 2, erased
    assert alice.get_all(filters={"AND": [{"user_id": "alice"}, {"run_id": "commute"}]})["results"] == []
    step("run_is_a_session", erased)

    # Graph memory: enable_graph=True makes the add answer the relations it wrote (Mem0's OSS
    # shape, one inner list per edge), a search answer the relations of the entities the query
    # names, and users() lists each entity with the relations of its node; bob sees none of it.
    g = alice.add(
        [{"role": "user", "name": "Alice", "content": "My sister Ana lives in Porto."}],
        user_id="alice",
        infer=False,
        enable_graph=True,
    )
    step("graph_add", g)
    wrote = [r for inner in g["relations"]["added_entities"] for r in inner]
    assert {"source": "Ana", "relationship": "lives_in", "target": "Porto"} in wrote, g
    assert g["relations"]["deleted_entities"] == [], g
    found = alice.search("Where does Ana live?", filters={"user_id": "alice"}, enable_graph=True)
    assert any(
        (r["source"], r["relationship"], r["target"]) == ("Ana", "lives_in", "Porto")
        for r in found["relations"]
    ), found
    users = alice.users()
    me = [e for e in users["results"] if e["name"] == "alice"]
    assert me and any(r["relationship"] == "sibling_of" for r in me[0]["relations"]), users
    bob_found = bob.search("Where does Ana live?", filters={"user_id": "bob"}, enable_graph=True)
    assert "Porto" not in json.dumps(bob_found) and "Porto" not in json.dumps(bob.users())
    step("graph_relations", found["relations"])
    summary["graph_relations"] = wrote

    summary.update(
        memory_id=mid,
        added=len(added_ids),
        history_events=events,
        left_after_delete_all=len(after["results"]),
        seconds=round(time.monotonic() - t0, 2),
    )
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
