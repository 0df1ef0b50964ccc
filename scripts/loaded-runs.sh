#!/usr/bin/env bash
# The timing-sensitive test files, run again and again on a loaded machine: every file the
# test tree's allow-list lets wait by the clock (test/unit/test-tree.test.ts: leases, ack
# waits, generated moments, bounds raced by timers) and the files that bound an elapsed
# time. A CPU hog per core runs beside them (niced to 0 like the tests, so it competes).
#
#   bash scripts/loaded-runs.sh            # 10 runs, newest server
#   RUNS=3 HOGS=1 bash scripts/loaded-runs.sh --project integration-oldest
#
# Prints one line per run and exits 1 if any run failed; each run's output is kept in
# .bench-out/loaded-runs/<run>.log (git-ignored).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs="${RUNS:-10}"
hogs="${HOGS:-$(nproc)}"
project=("$@")
[[ ${#project[@]} -eq 0 ]] && project=(--project integration-newest --project unit)

mapfile -t files < <(
  {
    grep -oE '^  "test/[^"]+\.test\.ts"' test/unit/test-tree.test.ts | tr -d ' "'
    # Elapsed-time bounds that must hold on a loaded two-core machine.
    printf '%s\n' test/integration/publish.test.ts test/integration/replay.test.ts test/integration/turn-edges.test.ts
  } | sort -u
)
for f in "${files[@]}"; do
  [[ -f $f ]] || { echo "loaded-runs: $f is listed but does not exist" >&2; exit 2; }
done

out=.bench-out/loaded-runs
mkdir -p "$out"
pids=()
for _ in $(seq "$hogs"); do
  (while :; do :; done) &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT

failed=0
echo "loaded-runs: ${#files[@]} files, $runs runs, $hogs CPU hogs beside, ${project[*]}"
for r in $(seq "$runs"); do
  t0=$SECONDS
  log="$out/run-$r.log"
  if JETLOOP_NATS_BACKEND="${JETLOOP_NATS_BACKEND:-processes}" npx vitest run "${project[@]}" "${files[@]}" >"$log" 2>&1; then
    verdict=passed
  else
    verdict=FAILED
    failed=$((failed + 1))
  fi
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^\s*(Tests|Test Files) ' | tr -s ' ' | paste -sd ';')
  echo "run $r: $verdict in $((SECONDS - t0)) s, load $(cut -d' ' -f1 /proc/loadavg):$summary"
done
echo "loaded-runs: $failed of $runs runs failed"
[[ $failed -eq 0 ]]
