#!/usr/bin/env bash
# The Python package's tests, run by ./scripts/test.sh (after the workspace tests, which built
# target/debug/mnemo that the CLI round-trip test calls). Builds the package ONCE, the way users
# install it (`pip install ./crates/mnemo-py`), into a fresh virtualenv under target/, then runs
# pytest (both stores: MNEMO_TEST_PG_URL must name a PostgreSQL server, as test.sh provides) and
# mypy over the package's stubs and annotations.
#
# The build is a debug build in the shared target directory: it reuses the dependencies the
# workspace build compiled and recompiles only what the Python crate's own feature set changes.
# A missing prerequisite (python3 with venv, the models, PostgreSQL) fails with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
target="$(realpath -m "${CARGO_TARGET_DIR:-target}")"
python="${MNEMO_PYTHON:-python3}"
fail() { echo "test_python.sh: $*" >&2; exit 1; }
command -v "$python" >/dev/null || fail "$python not found: the Python tests need CPython >= 3.9"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "$python is older than 3.9"
[ -n "${MNEMO_TEST_PG_URL:-}" ] || fail "MNEMO_TEST_PG_URL is not set (./scripts/test.sh starts PostgreSQL and sets it)"
[ -x "$target/debug/mnemo" ] || fail "$target/debug/mnemo is missing (build it: cargo build -p mnemo-cli)"
# The CLI round-trip test calls this binary (wherever CARGO_TARGET_DIR put it).
export MNEMO_BIN="${MNEMO_BIN:-$target/debug/mnemo}"
venv="$target/py-venv"
rm -rf "$venv"
"$python" -m venv "$venv" || fail "'$python -m venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
"$venv/bin/pip" install --quiet --upgrade pip
"$venv/bin/pip" install --quiet pytest mypy
# maturin (the build backend named in pyproject.toml) builds the wheel; a dev profile here,
# a release build for users. `testing` adds what only the tests use (`ScratchSchema`,
# `_panic_probe`); the wheel users install is built without it.
CARGO_TARGET_DIR="$target" MATURIN_PEP517_ARGS="--profile dev --features testing" \
  "$venv/bin/pip" install --quiet ./crates/mnemo-py
"$venv/bin/python" -m pytest crates/mnemo-py/tests -q -p no:cacheprovider
(cd crates/mnemo-py && "$venv/bin/mypy")
