#!/usr/bin/env bash
# The server crash test at full length: `mnemo serve` is killed with SIGKILL while 8 clients add
# over HTTP, restarted on the same data directory, and checked (see
# crates/mnemo-cli/tests/it/server_crash.rs), 20 rounds by default.
#
#   scripts/crash-rounds.sh                      # 20 rounds, a fresh seed (printed)
#   MNEMO_CRASH_ROUNDS=50 MNEMO_CRASH_SEED=42 scripts/crash-rounds.sh
#
# Prints the seed, one line per round and the figures: rounds, adds acknowledged, adds lost in
# flight and retried, duplicates (must be 0), integrity failures (must be 0). Exits non-zero
# when the test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
export MNEMO_CRASH_ROUNDS="${MNEMO_CRASH_ROUNDS:-20}"
if [ ! -f "$MNEMO_MODELS_DIR/all-minilm-l6-v2/model.safetensors" ]; then
  cargo build -p mnemo-cli
  "${CARGO_TARGET_DIR:-target}/debug/mnemo" models install
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test -p mnemo-cli --test it -- --exact \
  server_crash::sigkill_of_the_server_under_concurrent_adds_loses_and_repeats_nothing \
  --nocapture >"$log" 2>&1 || status=$?
grep -E '^(server crash:|round [0-9]+/)' "$log" || true
figures="$(grep -E '^figures:' "$log" || true)"
if [ -z "$figures" ]; then
  echo "no figures: the test stopped early (exit $status); its output:"
  cat "$log"
  exit 1
fi
field() { sed -E "s/.*[ (]$1=([0-9]+).*/\1/" <<<"$figures"; }
echo
echo "rounds:                           $(field rounds)"
echo "adds acknowledged:                $(field adds_acknowledged)"
echo "adds lost in flight and retried:  $(field lost_in_flight_retried) ($(field landed_before_kill) had been written before the kill and were replayed, one a round left unread on purpose; $(field written_by_retry) were written by the retry)"
echo "acknowledged adds replayed:       $(field replays_checked) (same id, replayed)"
echo "searches by own text (top hit):   $(field searches), misses $(field search_misses)"
echo "memories at the end:              $(field memories)"
echo "duplicates:                       $(field duplicates)"
echo "integrity failures:               $(field integrity_failures)"
echo "acknowledged adds missing:        $(field missing_acknowledged)"
echo "replay mismatches:                $(field replay_mismatches)"
if [ "$status" -ne 0 ]; then
  echo
  echo "FAILED (exit $status):"
  grep -E -A40 '^---- |panicked' "$log" || tail -60 "$log"
  exit "$status"
fi
echo "ok"
