#!/usr/bin/env bash
# A private Docker engine for the container tests, on a Debian machine where no image
# registry is reachable (root needed):
#
#   eval "$(bash scripts/docker-engine.sh start)"   # install, start, build images; prints exports
#   bash scripts/docker-engine.sh stop              # remove everything it started
#   bash scripts/docker-engine.sh env               # the exports again, if it is running
#   bash scripts/docker-engine.sh check             # fails if anything of it is left
#
# start: installs docker.io (and docker-compose) with apt when dockerd is missing, starts
# dockerd in the background with its own data-root, exec-root, pidfile and socket under
# $JETLOOP_DOCKER_DIR (default /tmp/jetloop-docker), changing neither iptables nor sysctl
# (published ports are served by docker-proxy), and builds one image per nats-server in
# .nats/bin (scripts/install-nats-server.sh) FROM scratch: the binary, the C library files
# it links against, an empty /tmp, and Debian's static busybox as wget (the healthcheck of
# docker-compose.yml). The images are tagged jetloop/nats-server:<version>;
# the test harness picks the one matching its server flavor (test/harness/containers.ts).
# It prints `export DOCKER_HOST=…` and the testcontainers settings this engine needs.
#
# stop: removes the containers (testcontainers' by their org.testcontainers=true label,
# then the rest, e.g. compose's), the networks, stops dockerd by its pid, unmounts what it
# left mounted, deletes the docker0 and br-* links it made, and removes $JETLOOP_DOCKER_DIR.
# Idempotent; safe when nothing runs.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${JETLOOP_DOCKER_DIR:-/tmp/jetloop-docker}"
SOCK="$DIR/docker.sock"
PIDFILE="$DIR/docker.pid"
EXEC_ROOT="$DIR/exec"
DATA_ROOT="$DIR/data"
LOG="$DIR/dockerd.log"
IMAGE_REPO="jetloop/nats-server"

log() { echo "docker-engine: $*" >&2; }

exports() {
  cat <<EOF
export DOCKER_HOST=unix://$SOCK
export TESTCONTAINERS_RYUK_DISABLED=true
export TESTCONTAINERS_HOST_OVERRIDE=localhost
EOF
}

docker_() { DOCKER_HOST="unix://$SOCK" docker "$@"; }

running() { [[ -S "$SOCK" ]] && docker_ version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_engine() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
  [[ ${#missing[@]} -eq 0 ]] && return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    log "no dockerd and no apt-get: install Docker yourself and set DOCKER_HOST"
    return 1
  fi
  log "installing ${missing[*]} with apt-get"
  apt-get update -qq >"$DIR/apt.log" 2>&1 || { cat "$DIR/apt.log" >&2; return 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$DIR/apt.log" 2>&1 \
    || { cat "$DIR/apt.log" >&2; return 1; }
  # The docker CLI may come with the system (a newer one) or with docker.io.
  command -v docker >/dev/null 2>&1 || { log "docker.io installed no docker client"; return 1; }
}

wait_until() { # wait_until <seconds> <what> <command...>
  local secs="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      log "timed out after ${secs}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# Debian's static busybox, for the wget that docker-compose.yml's healthcheck runs.
fetch_busybox() {
  [[ -x "$DIR/busybox" ]] && return 0
  local dl="$DIR/busybox-dl"
  local -a opts=(-qq -o APT::Sandbox::User=root)
  mkdir -p "$dl"
  if ! (cd "$dl" && apt-get "${opts[@]}" download busybox-static) >"$dl/log" 2>&1; then
    apt-get update -qq >>"$dl/log" 2>&1 || true
    (cd "$dl" && apt-get "${opts[@]}" download busybox-static) >>"$dl/log" 2>&1 || { cat "$dl/log" >&2; return 1; }
  fi
  dpkg-deb -x "$dl"/busybox-static_*.deb "$dl/x"
  cp "$dl/x/bin/busybox" "$DIR/busybox"
  rm -rf "$dl"
}

# build_image <nats-server binary>: prints the tag.
build_image() {
  local bin version build tag lib
  bin="$(realpath "$1")"
  version="$("$bin" --version 2>&1)"
  version="${version##*v}"
  tag="$IMAGE_REPO:$version"
  build="$DIR/build-$version"
  rm -rf "$build"
  mkdir -p "$build/rootfs/tmp"
  chmod 1777 "$build/rootfs/tmp"
  cp "$bin" "$build/rootfs/nats-server"
  mkdir -p "$build/rootfs/bin"
  cp "$DIR/busybox" "$build/rootfs/bin/busybox"
  ln -s busybox "$build/rootfs/bin/wget"
  # The dynamic loader and the libraries the binary links against (libc.so.6 and
  # ld-linux-x86-64.so.2 on amd64), at the paths the binary looks for them.
  for lib in $(ldd "$bin" | grep -oE '/[^ ]+'); do
    mkdir -p "$build/rootfs$(dirname "$lib")"
    cp -L "$lib" "$build/rootfs$lib"
  done
  cat >"$build/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
EXPOSE 4222 6222 8222
ENTRYPOINT ["/nats-server"]
CMD ["--jetstream"]
EOF
  DOCKER_BUILDKIT=0 docker_ build -q -t "$tag" --label "org.jetloop.nats-server=$version" "$build" >/dev/null
  rm -rf "$build"
  echo "$tag"
}

start() {
  if running; then
    log "already running (DOCKER_HOST=unix://$SOCK)"
    exports
    return 0
  fi
  mkdir -p "$DIR"
  install_engine
  local bins=() b
  for b in "$ROOT/.nats/bin/nats-server-oldest" "$ROOT/.nats/bin/nats-server-newest"; do
    [[ -x "$b" ]] && bins+=("$b")
  done
  if [[ ${#bins[@]} -eq 0 ]]; then
    log "no nats-server in .nats/bin: run scripts/install-nats-server.sh first"
    return 1
  fi
  local t0=$SECONDS
  mkdir -p "$EXEC_ROOT" "$DATA_ROOT"
  start_dockerd_and_build "${bins[@]}"
  log "dockerd $(docker_ version --format '{{.Server.Version}}') ready in $((SECONDS - t0))s at unix://$SOCK"
  exports
}

start_dockerd_and_build() {
  local tags=() b
  # dockerd must answer before it can build; start it, build, then check containerd by
  # running the first image.
  ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | sort >"$DIR/links-before"
  dockerd \
    --data-root "$DATA_ROOT" --exec-root "$EXEC_ROOT" --pidfile "$PIDFILE" -H "unix://$SOCK" \
    --iptables=false --ip6tables=false --ip-forward=false --storage-driver=overlay2 \
    >"$LOG" 2>&1 </dev/null &
  disown || true
  if ! wait_until 30 "the dockerd socket" test -S "$SOCK" || ! wait_until 30 "dockerd to answer" running; then
    tail -n 30 "$LOG" >&2
    return 1
  fi
  fetch_busybox
  for b in "$@"; do tags+=("$(build_image "$b")"); done
  # dockerd answers before its containerd is up; a first run can race with it.
  if ! wait_until 30 "containerd to run a container" docker_ run --rm "${tags[0]}" --version; then
    tail -n 30 "$LOG" >&2
    return 1
  fi
  log "images: ${tags[*]}"
}

stop() {
  if running; then
    local ids
    ids="$(docker_ ps -aq --filter label=org.testcontainers=true)"
    if [[ -n "$ids" ]]; then
      log "removing $(wc -w <<<"$ids") testcontainers container(s)"
      # shellcheck disable=SC2086
      docker_ rm -f -v $ids >/dev/null
    fi
    ids="$(docker_ ps -aq)"
    if [[ -n "$ids" ]]; then
      log "removing $(wc -w <<<"$ids") other container(s)"
      # shellcheck disable=SC2086
      docker_ rm -f -v $ids >/dev/null
    fi
    docker_ network prune -f >/dev/null 2>&1 || true
  fi
  if [[ -f "$PIDFILE" ]]; then
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid"
      local deadline=$((SECONDS + 20))
      while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
      if kill -0 "$pid" 2>/dev/null; then
        log "dockerd ($pid) did not stop in 20s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
      fi
      log "dockerd ($pid) stopped"
    fi
  fi
  # What dockerd leaves mounted (the network namespace at least), deepest first.
  if [[ -d "$DIR" ]]; then
    local m
    while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "could not unmount $m"
    done < <(awk -v d="$DIR" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
  fi
  # Bridge links dockerd made: docker0, and br-<network> links that were not there before.
  if [[ -f "$DIR/links-before" ]]; then
    local l
    while read -r l; do
      [[ "$l" == docker0 ]] || { [[ "$l" == br-* ]] && ! grep -qxF "$l" "$DIR/links-before"; } || continue
      ip link delete "$l" 2>/dev/null && log "deleted link $l"
    done < <(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//')
  fi
  rm -rf "$DIR"
}

# What stop must have removed: dockerd and its children, mounts, links, the folder.
check() {
  local left=()
  [[ -n "$(pgrep -f -- "$EXEC_ROOT" || true)" ]] && left+=("processes: $(pgrep -f -- "$EXEC_ROOT" | tr '\n' ' ')")
  grep -q " $DIR" /proc/mounts && left+=("mounts: $(awk -v d="$DIR" 'index($2, d) == 1 {print $2}' /proc/mounts | tr '\n' ' ')")
  ip link show docker0 >/dev/null 2>&1 && left+=("link docker0")
  [[ -e "$DIR" ]] && left+=("folder $DIR")
  if [[ ${#left[@]} -gt 0 ]]; then
    log "left behind: ${left[*]}"
    return 1
  fi
  log "nothing left behind (no dockerd, containerd or docker-proxy of $DIR, no mount, no docker0, no folder)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  check) check ;;
  env) running && exports || { log "not running"; exit 1; } ;;
  -h|--help|"") sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
  *) log "unknown command: $1"; exit 2 ;;
esac
