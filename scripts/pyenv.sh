#!/usr/bin/env bash
# Creates (or reuses) the Python virtualenv that the client-compatibility tests drive mnemo with:
# the official Mem0 SDK and the official MCP Python SDK, at pinned versions. The venv lives in
# "${CARGO_TARGET_DIR:-./target}/pyenv"; a marker file records the pinned set, so a second run is
# instant and a change of pins rebuilds it. Prints the venv's python path on stdout (and nothing
# else there); progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

PINS="mem0ai==2.2.1 mcp==2.3.0"
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
venv="$target/pyenv"
marker="$venv/.mnemo-pins"
python="$venv/bin/python"

if [ -f "$marker" ] && [ "$(cat "$marker")" = "$PINS" ] && [ -x "$python" ]; then
  echo "$python"
  exit 0
fi

# Another process may be building the same venv (parallel test binaries): one at a time.
mkdir -p "$target"
exec 9>"$target/pyenv.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$PINS" ] && [ -x "$python" ]; then
  echo "$python"
  exit 0
fi

echo "pyenv: installing $PINS into $venv" >&2
rm -rf "$venv"
python3 -m venv "$venv" >&2
# shellcheck disable=SC2086
"$python" -m pip install --quiet --disable-pip-version-check $PINS >&2
"$python" - >&2 <<'EOF'
import importlib.metadata as m
assert m.version("mem0ai") == "2.2.1", m.version("mem0ai")
assert m.version("mcp") == "2.3.0", m.version("mcp")
EOF
echo "$PINS" >"$marker"
echo "$python"
