#!/usr/bin/env bash
# Runs every check and test of every module, on a fresh Debian/Ubuntu machine
# too: installs Go and gcc when missing, finds or starts the servers the
# tests need without changing any server it did not start (scripts/services.sh),
# then for every module (every directory with a go.mod): build, go vet,
# staticcheck, go test -race -shuffle=on, every benchmark once; and the
# repository checks (gofmt, go.work, tidy, one version of each dependency
# across the modules, a lean core module graph, a set-up that leaves a
# password-protected PostgreSQL unchanged). Each phase says what it guards. It drops the empty once* schemas the tests made in the
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
# The run leaves the checkout as it found it (checked at the end): no file
# of the repository is changed or added by a build, a test or a tool.
GIT_STATUS_BEFORE=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
on_exit "rm -rf $(printf %q "$WORK")"

# Every module of the repository, as ./dir (./ for the core), and the
# pattern naming every package of each (MODULE_PATH/...), for the phases
# that check all modules in one workspace-mode invocation.
mapfile -t MODULES < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sort)
in_module() { # in_module DIR CMD...: CMD in DIR, with the module's own go.mod only
  (cd "$1" && GOWORK=off "${@:2}")
}

phase_begin "install: Go, gcc"
ensure_go
# -race needs cgo, hence a C compiler.
command -v gcc >/dev/null 2>&1 || apt_install "a C compiler: go test -race needs cgo" gcc libc6-dev
go version >&2
mapfile -t ALL_PKGS < <(go list -m -f '{{.Path}}/...')

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

# Guards: formatting; shell scripts; that go.work lists every module; and per
# module, with its own go.mod only (GOWORK=off): a copy of LICENSE, a tidy
# go.mod/go.sum (every import of every file, tests included, is required),
# and the same version of every dependency as the workspace selects. The
# last makes a workspace-mode build compile exactly what each module's own
# build does, so build, vet and staticcheck check every module in one
# workspace-mode invocation, and the per-module test runs share one build
# cache instead of compiling the core and its dependencies once per module.
phase_begin "check: gofmt, shellcheck; every module in go.work, tidy, at the workspace's versions, with LICENSE"
mapfile -t gofiles < <(git ls-files '*.go' 2>/dev/null || find . -name '*.go')
unformatted=$(gofmt -l "${gofiles[@]}")
[ -z "$unformatted" ] || die "gofmt needed: $unformatted"
command -v shellcheck >/dev/null 2>&1 || apt_install "shellcheck, to check scripts/*.sh, .ci/run and bench/peers/external/build.sh" shellcheck
shellcheck -x -S warning scripts/*.sh .ci/run bench/peers/external/build.sh
want=$(for m in "${MODULES[@]}"; do (cd "$m" && pwd); done | sort)
have=$(go list -m -f '{{.Dir}}' | sort)
[ "$want" = "$have" ] || die "go.work does not list every module (go work use -r . adds them all):
$(diff <(echo "$want") <(echo "$have") || true)"
go list -m -f '{{.Path}} {{.Version}}' all | sort >"$WORK/workspace.versions"
used='{{with .Module}}{{if not .Main}}{{if not .Replace}}{{.Path}} {{.Version}}{{end}}{{end}}{{end}}'
for m in "${MODULES[@]}"; do
  cmp -s LICENSE "$m/LICENSE" || die "$m has no copy of LICENSE (cp LICENSE $m/): pkg.go.dev reads each module's own"
  in_module "$m" go mod tidy -diff >"$WORK/tidy.diff" 2>&1 || die "go.mod of $m is not tidy (cd $m && go mod tidy):
$(cat "$WORK/tidy.diff")"
  # The modules that provide a package to the module's build, tests included.
  in_module "$m" go list -deps -test -f "$used" ./... | sort -u >"$WORK/module.versions"
  differ=$(comm -23 "$WORK/module.versions" "$WORK/workspace.versions")
  [ -z "$differ" ] || die "$m builds with versions other than the workspace's (go work sync, then go mod tidy in each module):
$differ"
done
log "modules: ${MODULES[*]}"

# Guards: every package of every module compiles and every command links.
# One invocation for all modules: the check above makes it the same build
# as each module's own.
phase_begin "build: every module"
go build -o /dev/null "${ALL_PKGS[@]}"

# Guards: go vet's checks on every package and test file of every module.
phase_begin "vet: every module"
go vet "${ALL_PKGS[@]}"

# Guards: staticcheck's checks on every package and test file.
phase_begin "staticcheck $STATICCHECK_VERSION: every module"
ensure_staticcheck "$STATICCHECK_VERSION"
"$STATICCHECK" "${ALL_PKGS[@]}"

phase_begin "check: a module importing only the core and its backends has a lean graph"
scripts/check-lean-core.sh

phase_begin "check: the set-up leaves a password-protected PostgreSQL unchanged"
scripts/check-setup-pg.sh

# Guards: a release works as a user's go command will see it: every module
# tagged by scripts/release.sh in a scratch clone, served by a file GOPROXY,
# fetched with go get and built by a new module without replace or network,
# and cmd/once installed with go install …@tag.
phase_begin "check: the release rehearsal (scripts/check-release.sh)"
scripts/check-release.sh

# Guards: every test of every module under the race detector and in
# shuffled order, against the real servers. One invocation for all modules
# but two, so that packages of every module share the two cores instead of
# each module waiting for its slowest package: the checks above make the
# workspace's build each module's own (tidy go.mod files at the workspace's
# versions). The fault suite runs alone, as it stops and restarts servers
# (Redis Cluster nodes among them) that other tests use. The bench module is
# a measuring tool whose tests check its harness (histograms, plots, a quick
# run); -race there would only slow what it times and compile its plotting
# dependencies a second time, so it runs without.
mapfile -t RACE_PKGS < <(for m in "${MODULES[@]}"; do case "$m" in ./faults | ./bench) ;; *) echo "$m/..." ;; esac; done)
phase_begin "tests: every module but faults and bench (-race -shuffle=on)"
go test -race -shuffle=on -count=1 -timeout 15m "${RACE_PKGS[@]}"
phase_begin "tests: ./bench (-shuffle=on; a tool, without -race)"
in_module ./bench go test -shuffle=on -count=1 -timeout 15m ./...
phase_begin "tests: ./faults (-race -shuffle=on), alone"
in_module ./faults go test -race -shuffle=on -count=1 -timeout 15m ./...

# Guards: every benchmark runs (once, -benchtime=1x) without failing, and
# the hot paths stay within their allocation budgets (without -race, which
# allocates on its own). One invocation, over the packages that hold a
# benchmark only (the other packages would be linked to run nothing).
phase_begin "benchmarks once (-benchtime=1x) and allocation budgets, without -race"
mapfile -t bench_dirs < <(git ls-files '*_test.go' 2>/dev/null | xargs grep -l '^func Benchmark' | xargs -n1 dirname | sort -u | sed 's#^#./#; s#^\./\.$#.#')
[ "${#bench_dirs[@]}" -gt 0 ] || die "found no benchmark"
go test -count=1 -run '^TestAllocationBudgets$' -v -bench . -benchtime=1x -timeout 10m "${bench_dirs[@]}" >"$WORK/bench.log" 2>&1 ||
  { tail -n 60 "$WORK/bench.log" >&2; die "benchmarks or allocation budgets"; }
grep -q -- '--- PASS: TestAllocationBudgets' "$WORK/bench.log" || die "TestAllocationBudgets did not run"

phase_begin "check: the tests left the PostgreSQL database as they found it"
for schema in $(comm -13 <(printf '%s\n' "$PG_SCHEMAS_BEFORE") <(pg_once_schemas)); do
  psql -w -X -q -tA -v ON_ERROR_STOP=1 -c "DROP SCHEMA \"$schema\"" "$ONCE_POSTGRES_URL" </dev/null ||
    die "the tests left the schema $schema with objects in it (DROP SCHEMA without CASCADE refused)"
  log "dropped the empty schema $schema the tests made"
done
[ "$(pg_once_schemas)" = "$PG_SCHEMAS_BEFORE" ] || die "the once* schemas differ from those found at the start"

phase_begin "check: the checkout is as the run found it (git status)"
GIT_STATUS_AFTER=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
[ "$GIT_STATUS_AFTER" = "$GIT_STATUS_BEFORE" ] || die "the run changed the checkout (git status before and after):
$(diff <(echo "$GIT_STATUS_BEFORE") <(echo "$GIT_STATUS_AFTER") || true)
$(git diff 2>/dev/null | head -n 40 || true)"

phase_begin "stop the servers this script started"
run_cleanups

phase_begin "check: no daemon this script started is left running"
check_none_left
phase_end
