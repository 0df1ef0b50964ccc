#!/usr/bin/env bash
# npm test's static checks, the linter, the type checker and the API report, side by side:
# each is one CPU-bound process (typed linting builds its own TypeScript program), so on two
# cores the linter bounds them (measured idle: lint 78 s, tsc 31 s of CPU, 109 s one after
# the other; the API report, scripts/api-report.ts, about 20 s of CPU). Each one's output is
# printed whole when it ends; fails if any does. The API report check fails when the public
# surface differs from etc/jetloop.api.md (npm run api:report writes it, for review). The
# typed docs (npm run docs:api, TypeDoc from src/index.ts into docs-api/, not checked in)
# must build without a warning (typedoc.json treats warnings as errors): a public type
# naming one the entry point does not export, or a broken {@link}, fails here.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="$(mktemp -d "${TMPDIR:-/tmp}/jetloop-static-checks.XXXXXX")"
trap 'rm -rf "$out"' EXIT
npm run -s lint >"$out/lint" 2>&1 &
lint=$!
npm run -s typecheck >"$out/typecheck" 2>&1 &
typecheck=$!
npm run -s api:check >"$out/api" 2>&1 &
api=$!
npm run -s docs:api >"$out/docs" 2>&1 &
docs=$!
status=0
for check in lint typecheck api docs; do
  if wait "${!check}"; then
    [[ -s $out/$check ]] && cat "$out/$check"
  else
    echo "static checks: $check failed" >&2
    cat "$out/$check" >&2
    status=1
  fi
done
exit "$status"
