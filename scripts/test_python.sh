#!/usr/bin/env bash
# The Python package's tests, run by ./scripts/test.sh (after the workspace tests, which built
# target/debug/mnemo that the CLI round-trip test calls). Builds the package ONCE, the way users
# install it (`pip install ./crates/mnemo-py`), into a fresh virtualenv under target/, then runs
# pytest (both stores: MNEMO_TEST_PG_URL must name a PostgreSQL server, as test.sh provides) and
# mypy over the package's stubs and annotations.
#
# The build is a debug build in the shared target directory. With the `testing` feature mnemo-py
# depends on mnemo-workspace-hack, which gives the wheel's third-party crates the workspace
# build's feature sets: it reuses what that build compiled and compiles pyo3, mnemo-models,
# mnemo and mnemo-py (its tests/it checks that this stays true).
# A missing prerequisite (python3 with venv, the models, PostgreSQL) fails with the reason.
# The lifecycle checks (fork, interpreter exit) then run again on a second CPython version.
#
# `test_python.sh --prepare` only makes the two fresh virtualenvs and installs the test tools
# (downloads, no build): test.sh runs it in the background while cargo compiles and then runs
# this script with MNEMO_PY_PREPARED=1, which uses those virtualenvs instead of making them.
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
python="${MNEMO_PYTHON:-python3}"
fail() { echo "test_python.sh: $*" >&2; exit 1; }
. scripts/phase.sh
venv="$target/py-venv"
venv2="$target/py-venv2"

# The second CPython for the lifecycle checks: $MNEMO_PYTHON2, else the newest of 3.13 .. 3.9
# other than the first one's, on PATH or under pyenv's versions. Sets `second` (empty: none).
find_second() {
  local first v cand
  first="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  second="${MNEMO_PYTHON2:-}"
  [ -n "$second" ] && return 0
  for v in 3.13 3.12 3.11 3.10 3.9; do
    [ "$v" = "$first" ] && continue
    for cand in "python$v" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v"; do
      # Run it, not just find it: a pyenv shim is on PATH for versions it will not run.
      if "$cand" -c 'import venv' >/dev/null 2>&1; then second="$cand"; return 0; fi
    done
  done
}

prepare() {
  command -v "$python" >/dev/null || fail "$python not found: the Python tests need CPython >= 3.9"
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "$python is older than 3.9"
  rm -rf "$venv" "$venv2"
  phase "py: venv" "$python" -m venv "$venv" || fail "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
  phase "py: pip install pip pytest mypy" bash -c '"$1/bin/pip" install --quiet --upgrade pip &&
    "$1/bin/pip" install --quiet pytest mypy' _ "$venv"
  find_second
  if [ -n "$second" ]; then
    phase "py: second venv" "$second" -m venv "$venv2" || fail "'$second -m venv' failed"
    phase "py: second venv's pip pytest" bash -c '"$1/bin/pip" install --quiet --upgrade pip &&
      "$1/bin/pip" install --quiet pytest' _ "$venv2"
  fi
}

if [ "${1:-}" = --prepare ]; then
  prepare
  exit 0
fi
[ -n "${MNEMO_TEST_PG_URL:-}" ] || fail "MNEMO_TEST_PG_URL is not set (./scripts/test.sh starts PostgreSQL and sets it)"
[ -x "$target/debug/mnemo" ] || fail "$target/debug/mnemo is missing (build it: cargo build -p mnemo-cli)"
# The CLI round-trip test calls this binary (wherever CARGO_TARGET_DIR put it).
export MNEMO_BIN="${MNEMO_BIN:-$target/debug/mnemo}"
if [ "${MNEMO_PY_PREPARED:-}" = 1 ]; then
  [ -x "$venv/bin/pytest" ] || fail "MNEMO_PY_PREPARED=1 but $venv has no pytest (run test_python.sh --prepare)"
  find_second
else
  prepare
fi
# maturin (the build backend named in pyproject.toml) builds the wheel; a dev profile here,
# a release build for users. `testing` adds what only the tests use (`ScratchSchema`,
# `_panic_probe`); the wheel users install is built without it. The wheel is built once (abi3:
# one wheel for every CPython >= 3.9) and installed from the file, so the second interpreter
# below tests the very same build. --timings: cargo's report of what it compiled and how long.
wheels="$target/py-wheel"
rm -rf "$wheels"
CARGO_TARGET_DIR="$target" MATURIN_PEP517_ARGS="--profile dev --features testing --timings" \
  phase "py: build the wheel" "$venv/bin/pip" wheel --quiet --no-deps -w "$wheels" ./crates/mnemo-py
phase "py: install the wheel" "$venv/bin/pip" install --quiet "$wheels"/mnemo-*.whl
phase "py: pytest" "$venv/bin/python" -m pytest crates/mnemo-py/tests -q -p no:cacheprovider
(cd crates/mnemo-py && phase "py: mypy" "$venv/bin/mypy")

# The process-lifecycle checks (fork, interpreter exit) depend on the interpreter's own
# machinery, so they run again on a second CPython minor version (find_second above).
if [ -z "$second" ]; then
  # Not silent: the summary line says what did not run and how to run it.
  echo "test_python.sh: NOT RUN: the lifecycle checks on a second CPython (none of 3.9-3.13 other than the first found; set MNEMO_PYTHON2)" >&2
else
  [ -x "$venv2/bin/pytest" ] || fail "$venv2 has no pytest (test_python.sh --prepare did not make it)"
  phase "py: install the wheel (second)" "$venv2/bin/pip" install --quiet "$wheels"/mnemo-*.whl
  echo "test_python.sh: lifecycle checks on $("$venv2/bin/python" -V)" >&2
  phase "py: lifecycle on a second CPython" \
    "$venv2/bin/python" -m pytest crates/mnemo-py/tests/test_lifecycle.py -q -p no:cacheprovider
fi
