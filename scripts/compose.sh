#!/usr/bin/env bash
# docker-compose.yml up or down with whichever compose the machine has: Compose v2
# (`docker compose`) or the standalone docker-compose 1.29 that scripts/docker-engine.sh
# installs from Debian (no `docker compose`, no `up --wait`). `up` waits until every node
# answers /healthz on its monitoring port (what `--wait` does under v2).
#   bash scripts/compose.sh up      # NATS_IMAGE=jetloop/nats-server:<version> offline
#   bash scripts/compose.sh down    # containers and their volumes
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ "${1:-}" == up || "${1:-}" == down ]] || { echo "usage: bash scripts/compose.sh up|down" >&2; exit 2; }

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
elif command -v docker-compose >/dev/null 2>&1; then
  compose=(docker-compose)
else
  echo "compose: neither \`docker compose\` nor \`docker-compose\` runs (bash scripts/docker-engine.sh start installs one)" >&2
  exit 1
fi

case "${1:-}" in
  up)
    "${compose[@]}" up -d
    for port in 18222 18223 18224; do
      for _ in $(seq 120); do
        if curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then continue 2; fi
        sleep 0.5
      done
      echo "compose: the node monitored on 127.0.0.1:$port is not healthy after 60 s" >&2
      "${compose[@]}" ps >&2
      exit 1
    done
    echo "compose: three nodes up: nats://127.0.0.1:14222,nats://127.0.0.1:14223,nats://127.0.0.1:14224"
    ;;
  down)
    # The gateway's profile too: a container it started is removed with the rest.
    "${compose[@]}" --profile gateway down -v
    ;;
esac
