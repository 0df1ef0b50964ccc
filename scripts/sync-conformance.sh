#!/usr/bin/env bash
# Brings new Go-written conformance data into the repository (test/conformance/data/), or
# with --check verifies the copy in the repository against its SHA256SUMS.
#   bash scripts/sync-conformance.sh [SOURCE]   SOURCE defaults to ../shared/conformance
#   bash scripts/sync-conformance.sh --check
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/test/conformance/data"

if [[ "${1:-}" == "--check" ]]; then
  cd "$dest"
  sha256sum --quiet --strict -c SHA256SUMS
  echo "conformance data: $(wc -l < SHA256SUMS) files match SHA256SUMS in $dest"
  exit 0
fi

src="${1:-$root/../shared/conformance}"
if [[ ! -f "$src/go-written-events.jsonl" ]]; then
  echo "sync-conformance: no conformance data at $src (expected go-written-events.jsonl there)" >&2
  exit 2
fi
shopt -s nullglob
files=("$src"/*.jsonl)
for f in "${files[@]}"; do install -m 644 "$f" "$dest/"; done
if [[ -f "$src/README.md" ]]; then install -m 644 "$src/README.md" "$dest/UPSTREAM.md"; fi
(cd "$dest" && sha256sum -- *.jsonl > SHA256SUMS)
echo "conformance data: ${#files[@]} files from $src into $dest"
git -C "$root" status --short -- "$dest"
