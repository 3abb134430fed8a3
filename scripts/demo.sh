#!/usr/bin/env bash
# Runs the main demo on a fresh Debian/Ubuntu machine: installs Go if it is
# missing, then runs the demo on the embedded in-memory store. Pass a server
# to use it instead, e.g. ONCE_POSTGRES_URL=postgres://... or
# ONCE_REDIS_ADDR=127.0.0.1:6379 (see README).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go
demo="${ONCE_DEMO:-./examples/payments}"
exec go run "$demo" "$@"
