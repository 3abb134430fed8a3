#!/usr/bin/env bash
# Runs every test on a fresh Debian/Ubuntu machine: installs Go, PostgreSQL
# and Redis when missing, starts them when down, starts a loopback Redis
# Cluster, then runs the tests with -race and every benchmark once.
# A missing server fails the run (ONCE_REQUIRE_SERVERS=1); it is never
# skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/services.sh
ensure_go
# -race needs cgo, hence a C compiler.
command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
ensure_postgres
ensure_redis
export ONCE_REQUIRE_SERVERS=1

log "go vet"
go vet ./...
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then log "gofmt needed: $unformatted"; exit 1; fi

log "tests (-race, shuffled)"
go test -race -shuffle=on -count=1 -timeout 15m ./...

log "benchmarks, once each so none rots"
go test -run '^$' -bench . -benchtime=1x -timeout 10m ./... >/dev/null
log "all passed"
