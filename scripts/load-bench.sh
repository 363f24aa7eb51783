#!/usr/bin/env bash
# Bounded load run of `mnemo serve` on loopback at 100,000 stored memories (BENCHMARKS.md):
# builds the benchmark store once (mnemo bench --store-dir), serves it with API keys on, and
# drives /healthz (the HTTP floor), search and add with wrk at a fixed concurrency.
#
#   scripts/load-bench.sh [MEMORIES] [SECONDS] [CONNECTIONS]
#
# Needs: a release build (cargo build --release -p mnemo-cli), the models (mnemo models
# install), wrk (apt-get install wrk). Server and wrk share this machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-100000}"; SECS="${2:-20}"; CONN="${3:-4}"
BIN=./target/release/mnemo
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
WORK="${MNEMO_LOAD_DIR:-/tmp/mnemo-load-$N}"
STORE="$WORK/store"
mkdir -p "$WORK"
if [ ! -f "$STORE/mnemo.db" ]; then
  echo "building a $N-memory store in $STORE" >&2
  "$BIN" --json bench --memories "$N" --add-sample 300 --queries 300 \
    --vector-cache "$WORK/vectors.bin" --store-dir "$STORE" > "$WORK/bench.json"
else
  # The in-process baseline of this run: the same memories, searched without HTTP.
  echo "in-process baseline (mnemo bench, vectors from the cache)" >&2
  "$BIN" --json bench --memories "$N" --add-sample 300 --queries 300 \
    --vector-cache "$WORK/vectors.bin" > "$WORK/bench.json"
fi
cat "$WORK/bench.json"
KEY=$("$BIN" --data-dir "$STORE" --json keys create --user-id bench-user --name load | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
export MNEMO_BENCH_KEY="$KEY"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
MNEMO_THREADS=1 MNEMO_LOG=warn "$BIN" --data-dir "$STORE" --json serve --bind "127.0.0.1:$PORT" \
  --rate-limit-per-minute 0 > "$WORK/serve.out" 2> "$WORK/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$PORT/readyz" > /dev/null && break; sleep 0.2; done
for target in healthz search add; do
  echo "== $target: $CONN connections, ${SECS}s"
  wrk -t 2 -c "$CONN" -d "${SECS}s" --latency -s "scripts/load/$target.lua" "http://127.0.0.1:$PORT" \
    | grep -E "Requests/sec|Non-2xx|Socket errors|  50%|  90%|  99%|requests in"
done
echo "== server metrics (operation durations)"
curl -s "http://127.0.0.1:$PORT/metrics" | grep -E '^mnemo_operation_duration_seconds_(sum|count)|^mnemo_queue_delay_seconds_(sum|count)'
