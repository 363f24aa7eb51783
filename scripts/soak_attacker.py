#!/usr/bin/env python3
"""The attacker of a soak under attack (scripts/soak-attack.sh): replays the attacks of issue 28
in a loop against a running `mnemo serve` with keys of its own, until --seconds pass, and prints
how many of each it sent and what the server answered.

    python3 scripts/soak_attacker.py --url URL --user-key K --agent-key K --seconds 600

Standard library only. Attacks: adds of 'y' x 65,536 (token counting), 200,000-token context
packs over them whose client hangs up after 0.3 s (abandoned work), adds with chosen agent ids
(write turns), PUT and link add on foreign and missing ids (existence oracle), NUL in metadata,
session id and idempotency key, and as_of out of range.
"""

import argparse
import collections
import json
import signal
import socket
import time
import urllib.error
import urllib.request
import uuid


def call(url, method, path, key, body=None, timeout=120):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # a timeout or a reset counts as its own outcome
        return type(e).__name__, b""


def abandoned_pack(url, key):
    host, port = url.removeprefix("http://").rsplit(":", 1)
    body = json.dumps({"query": "yyyy", "budget_tokens": 200_000}).encode()
    c = socket.create_connection((host, int(port)))
    c.sendall(b"POST /v1/context HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              + f"Authorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    time.sleep(0.3)
    c.close()
    return "hung up", b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--user-key", required=True)
    ap.add_argument("--agent-key", required=True)
    ap.add_argument("--foreign-id", required=True, help="a memory of a normal key")
    ap.add_argument("--seconds", type=float, default=600)
    a = ap.parse_args()
    u, g = a.user_key, a.agent_key
    attacks = [
        ("add y x 65,536", lambda: call(a.url, "POST", "/v1/memories", u, {"text": "y" * 65_536})),
        ("abandoned 200k pack", lambda: abandoned_pack(a.url, u)),
        ("add, chosen agent id", lambda: call(a.url, "POST", "/v1/memories", u, {
            "messages": [{"role": "user", "content": f"filler {i} " * 30} for i in range(200)],
            "agent_id": f"x{uuid.uuid4().int % 1000}", "infer": False})),
        ("PUT foreign id", lambda: call(a.url, "PUT", f"/v1/memories/{a.foreign_id}", g, {"text": "planted"})),
        ("PUT missing id", lambda: call(a.url, "PUT", f"/v1/memories/{uuid.uuid4()}", g, {"text": "planted"})),
        ("link from foreign id", lambda: call(a.url, "POST", f"/v1/memories/{a.foreign_id}/links", g,
                                              {"links": [{"to": a.foreign_id}]})),
        ("NUL metadata key", lambda: call(a.url, "POST", "/v1/memories", u, {"text": "x", "metadata": {"a\u0000": 1}})),
        ("NUL session id", lambda: call(a.url, "POST", "/v1/memories", u, {"text": "x", "session_id": "s\u0000"})),
        ("NUL idempotency key", lambda: call(a.url, "POST", "/v1/memories", u, {"text": "x", "idempotency_key": "k\u0000"})),
        ("as_of year 0", lambda: call(a.url, "POST", "/v1/memories/search", u,
                                      {"query": "x", "as_of": "0000-01-01T00:00:00Z"})),
    ]
    outcomes = collections.Counter()
    end = time.time() + a.seconds

    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    i = 0
    try:
        while time.time() < end:
            name, f = attacks[i % len(attacks)]
            st, _ = f()
            outcomes[(name, str(st))] += 1
            i += 1
    finally:
        for (name, st), n in sorted(outcomes.items()):
            print(f"attacker: {name:24} {st:>12} x {n}", flush=True)


if __name__ == "__main__":
    main()
