# Sourced by scripts/test.sh and scripts/test_python.sh: `phase NAME COMMAND...` runs COMMAND and
# prints how long it took: wall seconds, the CPU seconds of the processes it ran (user + system;
# against the wall time this tells a phase that waits from one that computes, and what it would
# take on more or fewer cores) and the run's total so far. Every log of the test command, CI's
# included, shows where its time goes. The exit status is COMMAND's own. MNEMO_PHASE_LOG (set by
# test.sh) collects the lines for the summary at the end of the run.
phase_t0="${phase_t0:-$(date +%s)}"
export phase_t0
# Sets phase_cpu_s to the CPU seconds of this shell's finished children so far: bash's `times`,
# run in this shell (a pipe or $(…) would run it in a subshell, which has no children), second
# line, as "1m2.345s 0m0.678s".
phase_cpu() {
  local f user sys
  f=$(mktemp)
  times >"$f"
  { read -r _ _; read -r user sys; } <"$f"
  rm -f "$f"
  phase_cpu_s=$(echo "$user $sys" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t }')
}
phase() {
  local name=$1 start cpu rc=0 line
  shift
  start=$(date +%s)
  phase_cpu
  cpu=$phase_cpu_s
  "$@" || rc=$?
  phase_cpu
  line=$(printf 'phase %-34s %5d s wall %6d s CPU  (run total %5d s)%s' "$name" \
    "$(($(date +%s) - start))" "$((phase_cpu_s - cpu))" "$(($(date +%s) - phase_t0))" \
    "$([ "$rc" = 0 ] || echo "  exit $rc")")
  echo "$line" >&2
  if [ -n "${MNEMO_PHASE_LOG:-}" ]; then echo "$line" >>"$MNEMO_PHASE_LOG"; fi
  return "$rc"
}
