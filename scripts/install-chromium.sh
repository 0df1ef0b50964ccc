#!/usr/bin/env bash
# Debian's chromium for the gateway's browser tests (test/integration/gateway/page.test.ts,
# driven by playwright-core). Idempotent: returns at once when /usr/bin/chromium exists
# (or CHROMIUM_BIN names a browser). Installing needs root and apt. With --if-possible
# (npm test's pretest), a machine where it cannot be installed is told so and not failed
# here: the browser tests then fail saying the browser is missing.
set -euo pipefail
bin="${CHROMIUM_BIN:-/usr/bin/chromium}"
if [[ -x "$bin" ]]; then
  exit 0
fi
if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null; then
  echo "install-chromium: $bin is missing; install Debian's chromium package (apt-get install chromium) or set CHROMIUM_BIN" >&2
  [[ "${1:-}" == "--if-possible" ]] && exit 0
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
echo "chromium: $("$bin" --version)"
