#!/usr/bin/env bash
# Load run of `mnemo serve` on PostgreSQL (issue 14, BENCHMARKS.md): the same memories served
# from the embedded SQLite store by one server, then from one PostgreSQL database by one
# server and by two servers side by side, each driven by wrk for search and add.
#
#   scripts/load-pg.sh [MEMORIES] [SECONDS] [CONNECTIONS]
#
# The store is built once with `mnemo bench --store-dir` (vectors cached) and copied into a
# throwaway PostgreSQL (scripts/pg.sh, stopped at the end) with `mnemo migrate`. With two
# servers the connections are split between them (CONNECTIONS/2 each, one wrk per server, run
# at the same time) and their request rates are summed, so both setups see the same offered
# concurrency. Needs a release build, the models and wrk; everything shares this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-10000}"; SECS="${2:-20}"; CONN="${3:-4}"
BIN="${MNEMO_BIN:-./target/release/mnemo}"
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
WORK="${MNEMO_LOAD_DIR:-/tmp/mnemo-load-pg-$N}"
STORE="$WORK/store"
mkdir -p "$WORK"
if [ ! -f "$STORE/mnemo.db" ]; then
  echo "building a $N-memory store in $STORE" >&2
  "$BIN" --json bench --memories "$N" --add-sample 300 --queries 100 \
    --vector-cache "$WORK/vectors.bin" --store-dir "$STORE" > "$WORK/bench.json"
fi
PGDIR="$WORK/pg"
scripts/pg.sh stop "$PGDIR" 2>/dev/null || true
PG=$(scripts/pg.sh start "$PGDIR" 2>>"$WORK/pg.log")
SERVERS=()
cleanup() {
  for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  scripts/pg.sh stop "$PGDIR" 2>/dev/null || true
}
trap cleanup EXIT
echo "copying the store into PostgreSQL" >&2
/usr/bin/time -f "migrate: %e s" "$BIN" --data-dir "$STORE" migrate --to "$PG" >&2

key() { # key <store args...>: a new API key for bench-user in that store
  "$BIN" "$@" --json keys create --user-id bench-user --name load |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])'
}
serve() { # serve <store args...>: starts a server; its port in PORT
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  MNEMO_THREADS=1 MNEMO_LOG=warn "$BIN" "$@" --json serve --bind "127.0.0.1:$port" \
    --rate-limit-per-minute 0 >> "$WORK/serve.out" 2>> "$WORK/serve.log" &
  SERVERS+=($!)
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/readyz" > /dev/null && break; sleep 0.2; done
  PORT=$port
}
drive() { # drive <target> <connections> <tag> <port>: one wrk run, its summary lines
  # add-runs: adds with every driver thread in a run (scope) of its own.
  local runs=0 script=$1
  if [ "$1" = add-runs ]; then runs=1; script=add; fi
  MNEMO_LOAD_RUNS=$runs MNEMO_LOAD_TAG="$3" wrk -t 2 -c "$2" -d "${SECS}s" --latency -s "scripts/load/$script.lua" \
    "http://127.0.0.1:$4" | grep -E "Requests/sec|Non-2xx|Socket errors|  50%|  99%|requests in"
}
stop_servers() {
  for p in "${SERVERS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  SERVERS=()
}

echo "== SQLite, one server ($CONN connections, ${SECS}s per target)"
export MNEMO_BENCH_KEY; MNEMO_BENCH_KEY=$(key --data-dir "$STORE")
serve --data-dir "$STORE"; P=$PORT
for t in search add add-runs; do echo "-- $t"; drive "$t" "$CONN" "s1" "$P"; done
stop_servers

MNEMO_BENCH_KEY=$(key --store "$PG")
echo "== PostgreSQL, one server ($CONN connections)"
serve --store "$PG"; P=$PORT
for t in search add add-runs; do echo "-- $t"; drive "$t" "$CONN" "p1" "$P"; done
stop_servers

HALF=$(( CONN / 2 > 0 ? CONN / 2 : 1 ))
echo "== PostgreSQL, two servers ($HALF connections each, at the same time)"
serve --store "$PG"; P1=$PORT; serve --store "$PG"; P2=$PORT
for t in search add add-runs; do
  echo "-- $t"
  drive "$t" "$HALF" "a" "$P1" > "$WORK/wrk-a.txt" &
  A=$!
  drive "$t" "$HALF" "b" "$P2" > "$WORK/wrk-b.txt"
  wait "$A"
  echo "server 1:"; cat "$WORK/wrk-a.txt"; echo "server 2:"; cat "$WORK/wrk-b.txt"
  grep -h "Requests/sec" "$WORK/wrk-a.txt" "$WORK/wrk-b.txt" |
    awk '{s += $2} END {printf "two servers together: %.1f requests/s\n", s}'
done
stop_servers
