#!/usr/bin/env bash
# Installs two nats-server versions into ./.nats/ (git-ignored), with no system-wide change:
#   oldest: Debian trixie's nats-server (2.10.x, the oldest server jetloop supports)
#   newest: Debian sid's nats-server (the newest packaged release)
# and the stable links .nats/bin/nats-server-oldest, .nats/bin/nats-server-newest and
# .nats/bin/nats-server (-> newest). The test harness (test/harness/server.ts) uses them.
#
# Idempotent: when both links already point at working binaries it exits at once.
#   --force                 download again (e.g. to pick up a newer sid release)
#   NATS_SERVER_BIN=<path>  use that binary instead; nothing is installed
#   DEBIAN_MIRROR=<url>     Debian mirror (default: the one in /etc/apt/sources.list*)
#   NATS_OLDEST_SUITE / NATS_NEWEST_SUITE   Debian suites (default: trixie / sid)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NATS_DIR="$ROOT/.nats"
BIN_DIR="$NATS_DIR/bin"
OLDEST_SUITE="${NATS_OLDEST_SUITE:-trixie}"
NEWEST_SUITE="${NATS_NEWEST_SUITE:-sid}"
FORCE=0

for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-nats-server: unknown argument: $arg" >&2; exit 2 ;;
  esac
done

log() { echo "install-nats-server: $*" >&2; }

alternatives() {
  cat >&2 <<'EOF'

The integration tests need nats-server >= 2.10 with JetStream. Instead of this script you can:
  * install nats-server >= 2.10 with a package manager (apt install nats-server on Debian trixie
    or later, brew install nats-server, ...) or from https://github.com/nats-io/nats-server/releases,
    then run the tests with NATS_SERVER_BIN=/path/to/nats-server
  * or run a server yourself, e.g. docker run -p 4222:4222 nats:2.10 -js, and point the suite
    at it with NATS_URL=nats://127.0.0.1:4222 (tests that start their own servers or a
    cluster still need a local binary)
EOF
}

server_version() { # prints e.g. 2.10.27, fails if the binary does not run
  local out
  out="$("$1" --version 2>&1)" || return 1
  out="${out##*v}"
  [[ -n "$out" ]] || return 1
  echo "$out"
}

# --- NATS_SERVER_BIN: use the given binary, install nothing ------------------------------
if [[ -n "${NATS_SERVER_BIN:-}" ]]; then
  if v="$(server_version "$NATS_SERVER_BIN")"; then
    log "NATS_SERVER_BIN=$NATS_SERVER_BIN (v$v); nothing to install"
    exit 0
  fi
  log "NATS_SERVER_BIN=$NATS_SERVER_BIN does not run (--version failed)"
  exit 1
fi

# --- fast path ---------------------------------------------------------------------------
if [[ $FORCE -eq 0 ]] \
  && old_v="$(server_version "$BIN_DIR/nats-server-oldest" 2>/dev/null)" \
  && new_v="$(server_version "$BIN_DIR/nats-server-newest" 2>/dev/null)" \
  && [[ -x "$BIN_DIR/nats-server" ]]; then
  log "already installed: oldest v$old_v, newest v$new_v (in $BIN_DIR; --force to reinstall)"
  exit 0
fi

# --- requirements ------------------------------------------------------------------------
for tool in apt-get apt-cache dpkg dpkg-deb; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "'$tool' is not available, so nats-server cannot be fetched from Debian here."
    alternatives
    exit 1
  fi
done

ARCH="$(dpkg --print-architecture)"

# Reuse this machine's Debian mirror (first deb URI ending in /debian), else deb.debian.org.
detect_mirror() {
  local f uri
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    uri="$(grep -hoE '(https?|mirror\+[a-z]+)://[^ ]*/debian/?( |$)' "$f" 2>/dev/null | head -n1 | tr -d ' ' || true)"
    if [[ -n "$uri" ]]; then echo "${uri%/}"; return; fi
  done
  echo "http://deb.debian.org/debian"
}
MIRROR="${DEBIAN_MIRROR:-$(detect_mirror)}"

KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SIGNED_BY=""
[[ -r "$KEYRING" ]] && SIGNED_BY="[signed-by=$KEYRING] "

TMP="$(mktemp -d "${TMPDIR:-/tmp}/jetloop-nats-install.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# Fetches nats-server from one Debian suite into .nats/<version>/; prints the binary path.
install_from_suite() {
  local suite="$1" work="$TMP/$1"
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/dl"
  echo "deb ${SIGNED_BY}$MIRROR $suite main" >"$work/sources.list"
  local -a opts=(
    -o "Dir::Etc::SourceList=$work/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache=$work/cache"
    -o "APT::Architecture=$ARCH"
    -o "Debug::NoLocking=1"
  )
  # apt drops to the _apt user for downloads; it cannot write into our private temp dir.
  [[ "$(id -u)" -eq 0 ]] && opts+=(-o "APT::Sandbox::User=root")

  log "fetching the $suite package index from $MIRROR"
  if ! apt-get "${opts[@]}" -qq update >"$work/update.log" 2>&1; then
    cat "$work/update.log" >&2
    log "apt-get update for $suite failed (no access to $MIRROR?)"
    return 1
  fi
  if ! compgen -G "$work/lists/*_Packages*" >/dev/null; then
    cat "$work/update.log" >&2
    log "could not fetch the $suite package index from $MIRROR"
    return 1
  fi
  local version
  version="$(apt-cache "${opts[@]}" show nats-server 2>/dev/null | sed -n 's/^Version: //p' | head -n1)"
  if [[ -z "$version" ]]; then
    log "Debian $suite has no nats-server package for $ARCH"
    return 1
  fi
  log "downloading nats-server $version ($suite)"
  if ! (cd "$work/dl" && apt-get "${opts[@]}" -qq download "nats-server=$version") >"$work/dl.log" 2>&1; then
    cat "$work/dl.log" >&2
    log "apt-get download nats-server=$version failed"
    return 1
  fi
  local deb upstream dest
  deb="$(ls "$work/dl"/nats-server_*.deb)"
  upstream="${version#*:}"     # drop an epoch
  upstream="${upstream%%-*}"   # drop the Debian revision: 2.10.27-1+b2 -> 2.10.27
  dest="$NATS_DIR/$upstream"
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  dpkg-deb -x "$deb" "$dest.partial"
  local bin
  bin="$(find "$dest.partial" -type f -name nats-server -perm -u+x | head -n1)"
  if [[ -z "$bin" ]]; then
    log "no nats-server binary inside $deb"
    return 1
  fi
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  echo "$dest/${bin#"$dest.partial/"}"
}

link() { # link <name> <target>, relative to .nats/bin
  ln -sfn "$(realpath --relative-to="$BIN_DIR" "$2")" "$BIN_DIR/$1"
}

mkdir -p "$BIN_DIR"
if ! oldest_bin="$(install_from_suite "$OLDEST_SUITE")" || ! newest_bin="$(install_from_suite "$NEWEST_SUITE")"; then
  alternatives
  exit 1
fi

for b in "$oldest_bin" "$newest_bin"; do
  if ! server_version "$b" >/dev/null; then
    log "$b does not run (--version failed)"
    alternatives
    exit 1
  fi
done

link nats-server-oldest "$oldest_bin"
link nats-server-newest "$newest_bin"
link nats-server "$newest_bin"

# Remove versions that no link points to any more.
keep_old="$(realpath "$oldest_bin")" keep_new="$(realpath "$newest_bin")"
for d in "$NATS_DIR"/*/; do
  d="${d%/}"
  [[ "$(basename "$d")" == bin ]] && continue
  [[ "$keep_old" == "$d"/* || "$keep_new" == "$d"/* ]] && continue
  rm -rf "$d"
done

log "installed: oldest v$(server_version "$BIN_DIR/nats-server-oldest") ($OLDEST_SUITE), newest v$(server_version "$BIN_DIR/nats-server-newest") ($NEWEST_SUITE)"
log "binaries: $BIN_DIR/nats-server-oldest, $BIN_DIR/nats-server-newest, $BIN_DIR/nats-server"
