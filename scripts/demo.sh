#!/usr/bin/env bash
# Runs the main demo (examples/payments; ONCE_DEMO names another example),
# on a fresh Debian/Ubuntu machine too: installs Go if it is missing, then
# runs the demo on the embedded in-memory store. It starts no server and
# needs none: only ONCE_POSTGRES_URL or ONCE_REDIS_ADDR, when given, switch
# the demo to that server (-store postgres / -store redis), used as is.
# Extra arguments go to the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go
demo="${ONCE_DEMO:-./examples/payments}"
store=()
if [ -n "${ONCE_POSTGRES_URL:-}" ]; then
  store=(-store postgres)
elif [ -n "${ONCE_REDIS_ADDR:-}" ]; then
  store=(-store redis)
fi
# The examples are their own module, listed in go.work.
exec env GOWORK="$PWD/go.work" go run "$demo" "${store[@]}" "$@"
