#!/usr/bin/env bash
# The parser property tests with many cases, in release mode: the filter language, model JSON
# repair, export records and entity extraction (mnemo-core tests/fuzz.rs), native body types,
# every route of the real router, import bodies and mnemo.toml (mnemo-server tests/it/fuzz.rs),
# and `mnemo import` lines (mnemo-cli src/import.rs). Every property is a test named `fuzz_*`
# whose case count is MNEMO_FUZZ_CASES (default here 90000, in `cargo test` 1000).
#
#   scripts/fuzz.sh                          # 12 properties x 90,000 cases: over a million
#   MNEMO_FUZZ_CASES=5000 scripts/fuzz.sh    # a quick pass
#
# Prints each run's properties and time, then the total number of cases. Exits non-zero on the
# first failing property (proptest prints the shrunk input).
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_FUZZ_CASES="${MNEMO_FUZZ_CASES:-90000}"
properties=0
started=$SECONDS
run() {
  local label=$1
  shift
  local t0=$SECONDS out
  if ! out=$(cargo test --release "$@" fuzz_ 2>&1); then
    echo "$out" | tail -80
    echo "fuzz: $label FAILED" >&2
    exit 1
  fi
  local n
  n=$(echo "$out" | grep -cE '^test .*fuzz_.* \.\.\. ok$' || true)
  if [ "$n" -eq 0 ]; then
    echo "$out" | tail -20
    echo "fuzz: $label ran no property" >&2
    exit 1
  fi
  properties=$((properties + n))
  echo "$label: $n properties x $MNEMO_FUZZ_CASES cases, $((SECONDS - t0)) s (build included)"
}
run "mnemo-core" -p mnemo-core --test fuzz
run "mnemo-server" -p mnemo-server --test it
run "mnemo-cli" -p mnemo-cli --bin mnemo
echo "total: $((properties * MNEMO_FUZZ_CASES)) cases in $properties properties, $((SECONDS - started)) s"
