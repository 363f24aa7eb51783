#!/usr/bin/env python3
"""Soak driver for `mnemo serve` (Python 3 standard library only; scripts/soak.sh starts it).

Holds a fixed mixed load against one server for a set time: THREADS client threads, each on
its own kept-alive connection and its own user scope, paced to RATE requests per second in
all. Each request is an add (raw, new text), a search, a list or a get of a memory the thread
added, drawn with fixed odds from a seeded generator. Before the clock starts the store is
preloaded with 10,000 memories (2,500 a thread): the adds of the run then grow it by a small
share, and the server's embedding cache (10,000 vectors by default, FIFO) is already full, so
its filling does not read as growth after the warm-up.

Prints per minute: requests (by kind; a request counts in the minute it finished in), errors,
p50/p99 latency and the server's RSS (VmRSS of /proc/PID/status at the end of the minute). At the end: total errors (must be 0) and RSS growth
from the end of minute 2 to the end of the last minute (must be at most MAX_GROWTH percent).
Exits 1 when either fails.
"""

import argparse
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse

WORDS = (
    "amber brisk copper dusty eager frosty gentle hollow ivory jolly kindly lanky mellow nimble "
    "olive plucky quiet rusty silver tawny heron badger otter falcon walrus lynx tortoise gecko "
    "pelican marmot bison ferret starling octopus raven beaver moose salmon painted repaired "
    "borrowed buried polished counted carried folded tuned weighed sketched guarded stacked "
    "traded baked mended lantern violin teapot compass kite anchor ledger helmet barrel saddle "
    "telescope quilt sundial harp wagon ladder Lisbon Oslo Nairobi Quito Hanoi Tbilisi Perth "
    "Cusco Dakar Riga Kyoto Bergen Tunis Lima Porto Krakow"
).split()

# Request kinds and their default weights (`--mix add=20,search=40,list=20,get=20`).
KINDS = ("add", "search", "list", "get")
DEFAULT_MIX = "add=20,search=40,list=20,get=20"


def parse_mix(spec):
    weights = dict.fromkeys(KINDS, 0.0)
    for part in spec.split(","):
        kind, _, w = part.partition("=")
        if kind.strip() not in weights:
            raise argparse.ArgumentTypeError(f"unknown request kind {kind!r} (kinds: {', '.join(KINDS)})")
        weights[kind.strip()] = float(w)
    total = sum(weights.values())
    if total <= 0:
        raise argparse.ArgumentTypeError("the mix needs a positive weight")
    return tuple((k, weights[k] / total) for k in KINDS)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


class Client:
    """One kept-alive HTTP/1.1 connection with the admin key."""

    # The server closes connections idle longer than its header read timeout (10 s by default);
    # a connection idle for a while is replaced before use so that race is never counted.
    MAX_IDLE = 5.0

    def __init__(self, url, key):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.conn = None
        self.last = 0.0

    def request(self, method, path, body=None):
        now = time.monotonic()
        if self.conn is None or now - self.last > self.MAX_IDLE:
            if self.conn is not None:
                self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        data = None if body is None else json.dumps(body).encode()
        try:
            self.conn.request(method, path, body=data, headers=self.headers)
            resp = self.conn.getresponse()
            payload = resp.read()
            if resp.getheader("Connection", "").lower() == "close":
                self.conn.close()
                self.conn = None
        except Exception:
            self.conn.close()
            self.conn = None
            raise
        finally:
            self.last = time.monotonic()
        return resp.status, payload


class Stats:
    """Per-minute buckets shared by the client threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.minutes = {}
        self.error_samples = []

    def record(self, minute, kind, ms, ok, what=None):
        with self.lock:
            b = self.minutes.setdefault(
                minute, {"count": 0, "errors": 0, "lat": [], "kinds": dict.fromkeys(KINDS, 0)}
            )
            b["count"] += 1
            b["kinds"][kind] += 1
            b["lat"].append(ms)
            if not ok:
                b["errors"] += 1
                if len(self.error_samples) < 20:
                    self.error_samples.append(f"minute {minute + 1} {kind}: {what}")


def text(rng):
    return " ".join(rng.choice(WORDS) for _ in range(8))


def preload(client, users, per_user, rng):
    """Adds `per_user` memories to each user in batches; returns the ids by user."""
    ids = {u: [] for u in users}
    for u in users:
        left = per_user
        while left > 0:
            n = min(100, left)
            items = [{"text": text(rng), "user_id": u, "infer": False} for _ in range(n)]
            status, payload = client.request("POST", "/v1/memories/batch", {"items": items})
            while status == 429:
                # The server's per-key rate limit: the preload waits it out, as a client should.
                time.sleep(1.0)
                status, payload = client.request("POST", "/v1/memories/batch", {"items": items})
            if status != 200:
                sys.exit(f"preload failed: {status} {payload[:300]!r}")
            for outcome in json.loads(payload)["results"]:
                ids[u].extend(r["id"] for r in outcome["results"])
            left -= n
    return ids


def worker(n, args, stats, t0, stop, ids):
    rng = random.Random(args.seed * 1000 + n)
    # Each thread sends with a key of its own (several keys, as several applications would).
    client = Client(args.url, args.key[n % len(args.key)])
    user = f"soak{n}"
    mine = ids[user]
    interval = args.threads / args.rate
    # Threads start spread over one interval so their requests interleave.
    next_at = t0 + interval * n / args.threads
    kinds = [k for k, _ in args.mix]
    weights = [w for _, w in args.mix]
    while not stop.is_set():
        now = time.monotonic()
        if next_at > now:
            if stop.wait(next_at - now):
                break
        next_at += interval
        kind = rng.choices(kinds, weights)[0]
        if kind == "add":
            req = ("POST", "/v1/memories", {"text": text(rng), "user_id": user, "infer": False})
        elif kind == "search":
            q = " ".join(rng.choice(WORDS) for _ in range(3))
            req = ("POST", "/v1/memories/search", {"query": q, "user_id": user, "top_k": 10})
        elif kind == "list":
            req = ("GET", f"/v1/memories?user_id={user}&limit=50", None)
        else:
            req = ("GET", f"/v1/memories/{rng.choice(mine)}?user_id={user}", None)
        started = time.monotonic()
        try:
            status, payload = client.request(*req)
            ok = 200 <= status < 300
            what = None if ok else f"{status} {payload[:200]!r}"
            if ok and kind == "add":
                mine.append(json.loads(payload)["results"][0]["id"])
        except Exception as e:  # a refused or broken connection is an error like a 5xx
            ok, what = False, f"{type(e).__name__}: {e}"
        done = time.monotonic()
        # A request counts in the minute it finished in; those finishing after the last
        # minute's end (the stop) count in the last minute.
        minute = min(int((done - t0) // 60), args.seconds // 60 - 1)
        stats.record(minute, kind, (done - started) * 1000, ok, what)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True, action="append",
                   help="an admin key; repeat it to give the threads keys of their own")
    p.add_argument("--pid", type=int, required=True, help="the server's process id, for its RSS")
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--rate", type=float, default=20.0, help="requests per second, all threads")
    p.add_argument("--preload", type=int, default=2500, help="memories per thread's user before the clock starts")
    p.add_argument("--mix", type=parse_mix, default=parse_mix(DEFAULT_MIX), help=f"request weights (default {DEFAULT_MIX})")
    p.add_argument("--setup-key", help="the key the preload adds with (default: the first --key)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--warmup-minutes", type=int, default=2)
    p.add_argument("--max-growth", type=float, default=5.0, help="percent")
    args = p.parse_args()
    if args.preload < 1 or args.seconds < 60 or args.warmup_minutes < 1:
        p.error("--preload must be at least 1, --seconds at least 60, --warmup-minutes at least 1")

    users = [f"soak{n}" for n in range(args.threads)]
    # The preload spends a key of its own: its batches are priced by their work, and a load key
    # left in debt by them would start the clock with 429s.
    setup = Client(args.url, args.setup_key or args.key[0])
    started = time.monotonic()
    ids = preload(setup, users, args.preload, random.Random(args.seed))
    print(
        f"preloaded {args.preload * args.threads} memories in {time.monotonic() - started:.1f} s; "
        f"server rss {rss_kib(args.pid) / 1024:.1f} MiB",
        flush=True,
    )
    print(
        f"load: {args.threads} threads, {args.rate:g} requests/s in all "
        f"({', '.join(f'{k} {w:.0%}' for k, w in args.mix)}), {args.seconds} s",
        flush=True,
    )

    stats = Stats()
    stop = threading.Event()
    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(n, args, stats, t0, stop, ids)) for n in range(args.threads)]
    for t in threads:
        t.start()
    minutes = args.seconds // 60
    rss = []
    added = 0
    for m in range(minutes):
        # Sleep to the end of minute m: this is the measuring clock, not a wait for an event.
        end = t0 + 60 * (m + 1)
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 1.0))
        rss.append(rss_kib(args.pid))
        if m == minutes - 1:
            stop.set()
            for t in threads:
                t.join()
        with stats.lock:
            b = stats.minutes.get(m, {"count": 0, "errors": 0, "lat": [], "kinds": {}})
            lat = sorted(b["lat"])
            kinds = dict(b["kinds"])
            count, errors = b["count"], b["errors"]
        added += kinds.get("add", 0)
        print(
            f"minute {m + 1:2d}: requests {count:5d} "
            f"(add {kinds.get('add', 0)}, search {kinds.get('search', 0)}, list {kinds.get('list', 0)}, "
            f"get {kinds.get('get', 0)}), errors {errors}, "
            f"p50 {percentile(lat, 50):7.1f} ms, p99 {percentile(lat, 99):7.1f} ms, "
            f"rss {rss[-1] / 1024:7.1f} MiB, memories {args.preload * args.threads + added}",
            flush=True,
        )
    with stats.lock:
        total = sum(b["count"] for b in stats.minutes.values())
        errors = sum(b["errors"] for b in stats.minutes.values())
        all_lat = sorted(x for b in stats.minutes.values() for x in b["lat"])
    print()
    print(f"requests: {total} in {minutes} minutes; p50 {percentile(all_lat, 50):.1f} ms, p99 {percentile(all_lat, 99):.1f} ms")
    print(f"errors: {errors}")
    for s in stats.error_samples:
        print(f"  {s}")
    failed = errors > 0
    warm = min(args.warmup_minutes, minutes)
    if minutes > warm:
        base, last = rss[warm - 1], rss[-1]
        growth = (last - base) / base * 100
        verdict = "ok" if growth <= args.max_growth else "FAIL"
        print(
            f"rss growth after warm-up: minute {warm} {base / 1024:.1f} MiB -> minute {minutes} "
            f"{last / 1024:.1f} MiB: {growth:+.2f}% (limit {args.max_growth:g}%): {verdict}"
        )
        failed |= growth > args.max_growth
    else:
        print(f"rss growth after warm-up: not measured (the run has {minutes} minute(s), none after minute {warm})")
        failed = True
    print("soak: FAIL" if failed else "soak: ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
