#!/usr/bin/env bash
# Runs a test command as a clean run must end, and fails when it does not:
#   - the command passes;
#   - its output has no log lines from passing tests (the bus's pino JSON is held per test
#     by test/harness/quiet-logs.ts and printed only for a failing one; a test's console
#     output shows up under a vitest "stdout |" or "stderr |" header);
#   - nothing is left in its temporary folder (a private TMPDIR: every temporary directory
#     the run makes, /tmp/jetloop-* included, goes there, so runs beside it do not count);
#   - the work tree is as it was (figures go to the ignored .bench-out/).
# Usage: bash scripts/clean-run.sh [command...]   (default: npm test)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ $# -gt 0 ]] || set -- npm test

tmp="$(mktemp -d "${TMPDIR:-/tmp}/jetloop-clean-run.XXXXXX")"
log="$tmp.log"
before="$(git status --porcelain)"
TMPDIR="$tmp" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [[ $rc -ne 0 ]]; then
  rm -rf "$tmp" "$log"
  exit "$rc"
fi

problems=0
noise="$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -nE '^\{"level":|^(stdout|stderr) \| ' || true)"
if [[ -n $noise ]]; then
  echo "clean-run: log lines in the output of a passing run:" >&2
  echo "$noise" | head -20 >&2
  problems=1
fi
# tsx keeps its compile cache in TMPDIR (tsx-<uid>): the tool's, not the run's. A test
# worker ended without its exit hook (killed at teardown) leaves its servers to their
# watchdogs (test/harness/server.ts), which remove their folders within about 2 s.
for _ in 1 2 3 4 5 6; do
  left="$(ls -A "$tmp" | grep -v '^tsx-' || true)"
  [[ -z $left ]] && break
  sleep 1
done
if [[ -n $left ]]; then
  echo "clean-run: left in the run's temporary folder $tmp:" >&2
  echo "$left" | head -20 >&2
  problems=1
fi
after="$(git status --porcelain)"
if [[ "$after" != "$before" ]]; then
  echo "clean-run: the run changed the work tree:" >&2
  diff <(echo "$before") <(echo "$after") >&2
  problems=1
fi
[[ $problems -eq 0 ]] && rm -rf "$tmp" "$log" && echo "clean-run: passed, quiet, nothing left behind, work tree unchanged"
exit "$problems"
