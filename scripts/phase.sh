# Sourced by scripts/test.sh and scripts/test_python.sh: `phase NAME COMMAND...` runs COMMAND and
# prints how long it took (wall seconds, and the run's total so far), so every log of the test
# command — CI's included — shows where its time goes. The exit status is COMMAND's own.
# MNEMO_PHASE_LOG (set by test.sh) collects the lines for the summary at the end of the run.
phase_t0="${phase_t0:-$(date +%s)}"
export phase_t0
phase() {
  local name=$1 start rc=0 line
  shift
  start=$(date +%s)
  "$@" || rc=$?
  line=$(printf 'phase %-34s %5d s  (run total %5d s)%s' "$name" "$(($(date +%s) - start))" \
    "$(($(date +%s) - phase_t0))" "$([ "$rc" = 0 ] || echo "  exit $rc")")
  echo "$line" >&2
  if [ -n "${MNEMO_PHASE_LOG:-}" ]; then echo "$line" >>"$MNEMO_PHASE_LOG"; fi
  return "$rc"
}
