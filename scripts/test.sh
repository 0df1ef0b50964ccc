#!/usr/bin/env bash
# npm test: the static checks (scripts/static-checks.sh: about 110 s of CPU, 80 s wall on
# two idle cores) run beside the tests at the lowest priority instead of before them. The
# tests mostly wait on servers, processes and timers, so the checks take CPU the tests
# leave; niced, they barely slow a test where the two compete. Their output is printed
# when the tests pass; a failed test run stops them. Arguments go to vitest.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
log="$(mktemp "${TMPDIR:-/tmp}/jetloop-static-checks-log.XXXXXX")"
# Their own process group, so all of them can be stopped; not their own session, which
# would be a scheduler group of its own where the priority would not count.
set -m
nice -n 19 bash scripts/static-checks.sh >"$log" 2>&1 </dev/null &
checks=$!
set +m
stop_checks() {
  kill -- -"$checks" 2>/dev/null && wait "$checks" 2>/dev/null
  rm -f "$log"
}
trap stop_checks EXIT
# Figures tests report (test/harness/figures-log.ts): this run's, printed once it passed.
figures=.bench-out/test-figures.log
rm -f "$figures"
npm run -s build:web && npx vitest run "$@"
rc=$?
if [[ $rc -ne 0 ]]; then
  exit "$rc"
fi
if [[ -s $figures ]]; then
  echo "figures of this run (case counts per rule, measurements):"
  sed 's/^/  /' "$figures"
fi
t0=$SECONDS
wait "$checks"
rc=$?
cat "$log"
echo "static checks: $([[ $rc -eq 0 ]] && echo passed || echo FAILED), waited $((SECONDS - t0)) s for them after the tests"
exit "$rc"
