#!/usr/bin/env bash
# Soak under attack: scripts/soak.sh twice on fresh servers — normal mixed load alone, then the
# same load while another key replays issue 28's attacks (scripts/soak_attacker.py) — and the
# normal load's p50/p99 and error count of both runs side by side. Reported, not asserted as
# timing (BENCHMARKS.md); the soak's own checks (no errors, bounded RSS) still decide each run.
#
#   scripts/soak-attack.sh                                  # 2 × 10 minutes
#   MNEMO_BIN=/path/mnemo SOAK_SECONDS=180 SOAK_PRELOAD=300 scripts/soak-attack.sh
#
# Every soak.sh setting applies to both runs.
set -uo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
SOAK_ATTACK=0 scripts/soak.sh | tee "$out/quiet.log"
SOAK_ATTACK=1 scripts/soak.sh | tee "$out/attack.log"
echo
echo "soak under attack ($(date -u +%FT%TZ), SOAK_SECONDS=${SOAK_SECONDS:-600}):"
for run in quiet attack; do
  summary="$(grep -E '^requests: ' "$out/$run.log" | tail -1)"
  errors="$(grep -E '^errors: ' "$out/$run.log" | tail -1)"
  echo "  $run: $summary; $errors"
done
grep -E '^attacker: ' "$out/attack.log" || true
rm -rf "$out"
