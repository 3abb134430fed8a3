#!/usr/bin/env bash
# Runs every check and test of every module, on a fresh Debian/Ubuntu machine
# too: installs Go and gcc when missing, finds or starts the servers the
# tests need without changing any server it did not start (scripts/services.sh),
# then per module (every directory with a go.mod): build in workspace mode
# and with GOWORK=off, go vet, staticcheck, go test -race -shuffle=on, every
# benchmark once; and the repository checks (gofmt, go.work, tidy, a lean
# core module graph, a set-up that leaves a password-protected PostgreSQL
# unchanged). It drops the empty once* schemas the tests made in the
# PostgreSQL database and fails if one is left with objects in it; it stops
# what it started, checks that no daemon of its own is left running, and
# prints the time of each phase.
#
# A missing server fails the run (ONCE_REQUIRE_SERVERS=1); it is never
# skipped. Servers given in the environment are used as they are:
# ONCE_POSTGRES_URL, ONCE_REDIS_ADDR, ONCE_REDIS_CLUSTER_ADDRS,
# ONCE_REDIS_SENTINEL_ADDRS, ONCE_MYSQL_DSN, ONCE_AMQP_URL, ONCE_NATS_URL.
# ONCE_REDIS_CLUSTER_BASE_PORT, ONCE_REDIS_SENTINEL_BASE_PORT and
# ONCE_REDIS_SENTINEL_PORT move the cluster and Sentinel the script starts.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/services.sh

STATICCHECK_VERSION=v0.8.2

finish() {
  local rc=$?
  phase_end_failed_if_open
  run_cleanups
  check_none_left || rc=1
  print_left_running
  phase_summary
  if [ "$rc" = 0 ]; then log "all passed"; else log "FAILED (exit $rc)"; fi
  exit "$rc"
}
phase_end_failed_if_open() { [ -z "$PHASE_NAME" ] || phase_end "  FAILED"; }
trap finish EXIT
trap 'exit 130' INT TERM # so that finish stops what was started

WORK=$(mktemp -d "${TMPDIR:-/tmp}/once-test.XXXXXX")
on_exit "rm -rf $(printf %q "$WORK")"

# Every module of the repository, as ./dir (./ for the core).
mapfile -t MODULES < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort)
in_module() { # in_module DIR CMD...: CMD in DIR, with the module's own go.mod only
  (cd "$1" && GOWORK=off "${@:2}")
}

phase_begin "install: Go, gcc"
ensure_go
# -race needs cgo, hence a C compiler.
command -v gcc >/dev/null 2>&1 || apt_install gcc libc6-dev
go version >&2

phase_begin "servers"
ensure_servers
export ONCE_REQUIRE_SERVERS=1

# The tests leave the PostgreSQL database as they found it: the schemas
# named once* that exist now stay; those the run made are dropped at the end
# when empty (an example's Migrate creates the shared schema once_examples
# and its close drops only its own tables, as other examples may be using
# the schema), and one that still holds objects fails the run.
pg_once_schemas() {
  psql -w -X -q -tA -c "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'once%'" "$ONCE_POSTGRES_URL" </dev/null | sort
}
PG_SCHEMAS_BEFORE=$(pg_once_schemas)

phase_begin "check: gofmt, shellcheck; every module in go.work, tidy, with LICENSE"
mapfile -t gofiles < <(git ls-files '*.go' 2>/dev/null || find . -name '*.go')
unformatted=$(gofmt -l "${gofiles[@]}")
[ -z "$unformatted" ] || die "gofmt needed: $unformatted"
command -v shellcheck >/dev/null 2>&1 || apt_install shellcheck
shellcheck -x -S warning scripts/*.sh .ci/run
want=$(for m in "${MODULES[@]}"; do (cd "$m" && pwd); done | sort)
have=$(go list -m -f '{{.Dir}}' | sort)
[ "$want" = "$have" ] || die "go.work does not list every module (go work use -r . adds them all):
$(diff <(echo "$want") <(echo "$have") || true)"
for m in "${MODULES[@]}"; do
  cmp -s LICENSE "$m/LICENSE" || die "$m has no copy of LICENSE (cp LICENSE $m/): pkg.go.dev reads each module's own"
  in_module "$m" go mod tidy -diff >"$WORK/tidy.diff" 2>&1 || die "go.mod of $m is not tidy (cd $m && go mod tidy):
$(cat "$WORK/tidy.diff")"
done
log "modules: ${MODULES[*]}"

phase_begin "build: every module, workspace mode and GOWORK=off"
for m in "${MODULES[@]}"; do
  (cd "$m" && go build -o /dev/null ./...)
  in_module "$m" go build -o /dev/null ./...
done

phase_begin "vet: every module"
for m in "${MODULES[@]}"; do in_module "$m" go vet ./...; done

phase_begin "staticcheck $STATICCHECK_VERSION: every module"
GOBIN="$WORK/bin" go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
for m in "${MODULES[@]}"; do in_module "$m" "$WORK/bin/staticcheck" ./...; done

phase_begin "check: a module importing only the core and its backends has a lean graph"
scripts/check-lean-core.sh

phase_begin "check: the set-up leaves a password-protected PostgreSQL unchanged"
scripts/check-setup-pg.sh

for m in "${MODULES[@]}"; do
  phase_begin "tests: $m (-race -shuffle=on)"
  in_module "$m" go test -race -shuffle=on -count=1 -timeout 15m ./...
done

phase_begin "allocation budgets of the hot paths (without -race, which allocates on its own)"
go test -run 'TestAllocationBudgets' -count=1 .

phase_begin "benchmarks: every module, once each (-benchtime=1x)"
for m in "${MODULES[@]}"; do
  in_module "$m" go test -run '^$' -bench . -benchtime=1x -timeout 10m ./... >"$WORK/bench.log" 2>&1 ||
    { tail -n 60 "$WORK/bench.log" >&2; die "benchmarks of $m"; }
done

phase_begin "check: the tests left the PostgreSQL database as they found it"
for schema in $(comm -13 <(printf '%s\n' "$PG_SCHEMAS_BEFORE") <(pg_once_schemas)); do
  psql -w -X -q -tA -v ON_ERROR_STOP=1 -c "DROP SCHEMA \"$schema\"" "$ONCE_POSTGRES_URL" </dev/null ||
    die "the tests left the schema $schema with objects in it (DROP SCHEMA without CASCADE refused)"
  log "dropped the empty schema $schema the tests made"
done
[ "$(pg_once_schemas)" = "$PG_SCHEMAS_BEFORE" ] || die "the once* schemas differ from those found at the start"

phase_begin "stop the servers this script started"
run_cleanups

phase_begin "check: no daemon this script started is left running"
check_none_left
phase_end
