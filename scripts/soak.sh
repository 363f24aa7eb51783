#!/usr/bin/env bash
# Soak: one `mnemo serve` under a fixed mixed load (adds, searches, lists, gets from 4 client
# threads at a fixed request rate) for SOAK_SECONDS (default 600). Prints per minute the request
# count, errors, p50/p99 latency and the server's RSS; at the end the total errors (must be 0) and
# the RSS growth from minute 2 to the last minute (must be at most 5%). Exits non-zero if either
# fails. The driver is scripts/soak.py (Python 3, standard library only).
#
#   scripts/soak.sh                                   # 10 minutes, target/release/mnemo
#   MNEMO_BIN=target/debug/mnemo SOAK_SECONDS=180 scripts/soak.sh
#
# Settings (environment): MNEMO_BIN (default target/release/mnemo, built with
# `cargo build --release -p mnemo-cli` when missing), MNEMO_MODELS_DIR (default ./models),
# SOAK_SECONDS (600), SOAK_THREADS (4), SOAK_RATE (requests per second in all, 20),
# SOAK_PRELOAD (memories per thread before the clock starts, 2500), SOAK_SEED (7),
# SOAK_MIX (request weights, add=20,search=40,list=20,get=20), SOAK_MAX_GROWTH (percent, 5),
# SOAK_WARMUP_MINUTES (2), SOAK_RATE_LIMIT (the server's per-key requests a minute; unset: its
# default; 0: off), SOAK_ATTACK (1: another key replays issue 28's attacks meanwhile,
# scripts/soak_attacker.py; see scripts/soak-attack.sh, which runs with and without it).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$root/models}"
bin="${MNEMO_BIN:-${CARGO_TARGET_DIR:-target}/release/mnemo}"
if [ ! -x "$bin" ]; then
  if [ -n "${MNEMO_BIN:-}" ]; then
    echo "MNEMO_BIN=$MNEMO_BIN is not an executable" >&2
    exit 2
  fi
  echo "building $bin (cargo build --release -p mnemo-cli)" >&2
  cargo build --release -p mnemo-cli
fi
if [ ! -f "$MNEMO_MODELS_DIR/all-minilm-l6-v2/model.safetensors" ]; then
  "$bin" models install
fi

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

data="$work/data"
key="$("$bin" --data-dir "$data" --json keys create --admin | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')"
# The server's default per-key rate limit applies (SOAK_RATE_LIMIT overrides it; 0 turns it
# off): the normal load spreads over one key per thread and stays below it, so a 429 there
# counts as an error; the attacker's keys meet the limit as any client would.
"$bin" --data-dir "$data" --json serve --bind 127.0.0.1:0 \
  ${SOAK_RATE_LIMIT:+--rate-limit-per-minute "$SOAK_RATE_LIMIT"} \
  >"$work/serve.out" 2>"$work/serve.log" &
pid=$!
# The server's first stdout line says where it listens; wait for that line (or its exit).
url=""
while [ -z "$url" ]; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "mnemo serve exited before listening; its log:" >&2
    cat "$work/serve.log" >&2
    exit 1
  fi
  url="$(python3 -c 'import json, sys
line = open(sys.argv[1]).readline()
print(json.loads(line)["listening"] if line.endswith("\n") else "")' "$work/serve.out")"
  [ -n "$url" ] || sleep 0.2
done

echo "soak: $("$bin" --version 2>/dev/null || echo mnemo) ($bin), server pid $pid at $url"
echo "soak: $(nproc) cores, $(git rev-parse --short HEAD 2>/dev/null || echo '?') + working tree, $(date -u +%FT%TZ)"
attacker=""
if [ "${SOAK_ATTACK:-0}" = 1 ]; then
  mk() { "$bin" --data-dir "$data" --json keys create "$@" | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])'; }
  victim="$(curl -s -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"text": "the victim keeps this", "user_id": "victim"}' "$url/v1/memories" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["id"])')"
  python3 "$root/scripts/soak_attacker.py" --url "$url" --user-key "$(mk --user-id mallory)" \
    --agent-key "$(mk --agent-id mallorybot)" --foreign-id "$victim" \
    --seconds "$(( ${SOAK_SECONDS:-600} + ${SOAK_PRELOAD_SECONDS:-0} ))" &
  attacker=$!
fi
status=0
keys=(--key "$key")
for _ in $(seq 2 "${SOAK_THREADS:-4}"); do
  keys+=(--key "$("$bin" --data-dir "$data" --json keys create --admin | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')")
done
setup_key="$("$bin" --data-dir "$data" --json keys create --admin | python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')"
python3 "$root/scripts/soak.py" --url "$url" "${keys[@]}" --setup-key "$setup_key" --pid "$pid" \
  --seconds "${SOAK_SECONDS:-600}" --threads "${SOAK_THREADS:-4}" --rate "${SOAK_RATE:-20}" \
  --preload "${SOAK_PRELOAD:-2500}" --seed "${SOAK_SEED:-7}" \
  --mix "${SOAK_MIX:-add=20,search=40,list=20,get=20}" \
  --max-growth "${SOAK_MAX_GROWTH:-5}" --warmup-minutes "${SOAK_WARMUP_MINUTES:-2}" || status=$?
if [ -n "$attacker" ]; then
  kill -TERM "$attacker" 2>/dev/null || true
  wait "$attacker" 2>/dev/null || true
fi
if ! kill -0 "$pid" 2>/dev/null; then
  echo "soak: the server died during the run; its log:"
  tail -50 "$work/serve.log"
  exit 1
fi
if grep -qE ' (ERROR|WARN) ' "$work/serve.log"; then
  echo "soak: warnings or errors in the server log:"
  grep -E ' (ERROR|WARN) ' "$work/serve.log" | head -20
fi
exit "$status"
