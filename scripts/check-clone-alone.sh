#!/usr/bin/env bash
# Proves that the repository stands alone, cheaply (not a second test run): clones the
# committed HEAD into an empty temporary folder (no ../shared beside it), then in the clone
#   - the conformance data is there and matches its SHA256SUMS;
#   - no file outside that data folder reads ../shared (new data arrives there only
#     through scripts/sync-conformance.sh);
#   - every suite that reads the data collects and runs its quick part: the unit
#     conformance and golden suites run, the gateway conformance suite is collected.
# node_modules and .nats are linked from this checkout: installing them is what npm ci and
# `npm test`'s pretest do in the main run, and doing it twice would cost minutes.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/jetloop-clone-alone.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --no-hardlinks "$root" "$tmp/jetloop"
cd "$tmp/jetloop"
[[ ! -e ../shared ]] || { echo "check-clone-alone: ../shared exists beside the clone" >&2; exit 1; }
ln -s "$root/node_modules" node_modules
ln -s "$root/.nats" .nats
export JETLOOP_NATS_BACKEND=processes

bash scripts/sync-conformance.sh --check
readers="$(git grep -lE '(\.\./)+shared/conformance|JETLOOP_CONFORMANCE_DIR' -- src test bench scripts ':!test/conformance/data' ':!scripts/sync-conformance.sh' ':!scripts/check-clone-alone.sh' || true)"
if [[ -n $readers ]]; then
  echo "check-clone-alone: these files still read conformance data from outside the repository:" >&2
  echo "$readers" >&2
  exit 1
fi
npx vitest run --project unit test/conformance test/unit/golden.test.ts >"$tmp/unit.log" 2>&1 || { cat "$tmp/unit.log" >&2; exit 1; }
npx vitest list --project integration-newest test/integration/gateway/conformance.test.ts >"$tmp/list.log" 2>&1 || { cat "$tmp/list.log" >&2; exit 1; }
echo "clone alone: data present and unchanged, no reader outside the repository, $(grep -c 'conformance.test.ts' "$tmp/list.log") gateway conformance cases collected, unit conformance suites pass"
