#!/usr/bin/env python3
"""How much one tenant's bulk adds slow other tenants' searches and adds (issue 28's soak, cut
down to its cause). Starts `mnemo serve` on a fresh store (rate limit off, so the bulk tenant
is not throttled), preloads 500 memories for the quiet tenant, then for SECONDS runs:

- the quiet tenant: a search and an add every 0.1 s each (two threads);
- with MODE `bulk`: another tenant adding 200 turns per request without pause; `ytext`: one
  65,536-character word per request; `none`: nothing (the baseline).

Prints the quiet tenant's search and add latencies (p50 / p90 / p99 / max, in ms) and how long
the bulk requests took. A measurement, run by hand: compare modes within one run of the machine.

    MNEMO_BIN=target/release/mnemo MNEMO_MODELS_DIR=./models \\
        python3 scripts/bulk_interference.py bulk 60 [extra `mnemo serve` flags]
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

WORDS = ("alpha beta gamma delta river mountain coffee piano garden winter summer train book "
         "city music paint").split()


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))] if values else float("nan")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "bulk"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    if mode not in ("none", "bulk", "ytext"):
        sys.exit("MODE must be none, bulk or ytext")
    binary = os.environ.get("MNEMO_BIN", "target/release/mnemo")
    data = tempfile.mkdtemp()
    key = json.loads(subprocess.check_output(
        [binary, "--data-dir", data, "--json", "keys", "create", "--admin"]))["key"]
    server = subprocess.Popen(
        [binary, "--data-dir", data, "--json", "serve", "--bind", "127.0.0.1:0",
         "--rate-limit-per-minute", "0", *sys.argv[3:]],
        stdout=subprocess.PIPE, stderr=open(os.path.join(data, "serve.log"), "w"))
    try:
        url = json.loads(server.stdout.readline())["listening"]

        def call(method, path, body=None):
            req = urllib.request.Request(url + path, method=method,
                                         data=None if body is None else json.dumps(body).encode())
            req.add_header("Authorization", f"Bearer {key}")
            req.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(req, timeout=300) as r:
                return json.loads(r.read())

        rng = random.Random(1)
        for _ in range(5):
            call("POST", "/v1/memories/batch", {"items": [
                {"text": " ".join(rng.choice(WORDS) for _ in range(8)), "user_id": "quiet",
                 "infer": False} for _ in range(100)]})
        stop = threading.Event()
        spans, lat = [], []

        def bulk():
            r = random.Random(2)
            while not stop.is_set():
                t0 = time.monotonic()
                if mode == "bulk":
                    call("POST", "/v1/memories", {
                        "messages": [{"role": "user", "content": f"filler {i} " * 30} for i in range(200)],
                        "user_id": "bulk", "agent_id": f"x{r.randrange(1000)}", "infer": False})
                elif mode == "ytext":
                    call("POST", "/v1/memories", {"text": "y" * 65536, "user_id": "bulk"})
                else:
                    stop.wait(0.5)
                    continue
                spans.append(time.monotonic() - t0)

        def quiet(kind):
            r = random.Random(kind)
            due = time.monotonic()
            while not stop.is_set():
                due += 0.1
                stop.wait(max(0.0, due - time.monotonic()))
                t0 = time.monotonic()
                if kind == "search":
                    call("POST", "/v1/memories/search", {
                        "query": " ".join(r.choice(WORDS) for _ in range(3)), "user_id": "quiet", "top_k": 10})
                else:
                    call("POST", "/v1/memories", {
                        "text": " ".join(r.choice(WORDS) for _ in range(8)), "user_id": "quiet", "infer": False})
                lat.append((kind, (time.monotonic() - t0) * 1000))

        threads = [threading.Thread(target=bulk), threading.Thread(target=quiet, args=("search",)),
                   threading.Thread(target=quiet, args=("add",))]
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        for kind in ("search", "add"):
            v = [ms for k, ms in lat if k == kind]
            print(f"{mode}: quiet {kind}: n={len(v)} p50 {pct(v, 50):.1f} p90 {pct(v, 90):.1f} "
                  f"p99 {pct(v, 99):.1f} max {max(v):.1f} ms")
        if spans:
            ms = [s * 1000 for s in spans]
            print(f"{mode}: bulk requests {len(ms)}: p50 {pct(ms, 50):.0f} ms, max {max(ms):.0f} ms")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
