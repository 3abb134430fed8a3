#!/usr/bin/env bash
# Builds peers-run: bench/peers' command with idemlease
# (github.com/repenguin22/idemlease) and go-idempotency
# (github.com/faustbrian/go-idempotency) beside raw, once and DBOS. The
# module proxy refuses both libraries, and their code stays out of this
# repository: the script clones them into a scratch directory outside it,
# copies this directory's adapters (main.go, idemlease.go, faustbrian.go)
# beside them without their build tag, writes a go.mod whose replace lines
# point at the clones and at this checkout's modules, and builds with
# GOWORK=off. It writes nothing inside the repository, and prints the
# binary's path.
#
#   ONCE_PEERS_SCRATCH  the scratch directory (default ${TMPDIR:-/tmp}/once-peers);
#                       its idemlease, go-idempotency, go-migrations and run
#                       subdirectories and peers-run are replaced on every build
#   IDEMLEASE_SRC       what git clones for idemlease (a URL or a local path)
#   IDEMLEASE_REF       the revision it checks out (default HEAD)
#   GOIDEMPOTENCY_SRC   likewise for go-idempotency
#   GOIDEMPOTENCY_REF
set -euo pipefail

die() { echo "build.sh: $*" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd -P)
peers=$(cd "$here/.." && pwd -P)
repo=$(cd "$here/../../.." && pwd -P)
scratch=${ONCE_PEERS_SCRATCH:-${TMPDIR:-/tmp}/once-peers}
idemlease_src=${IDEMLEASE_SRC:-https://github.com/repenguin22/idemlease.git}
idemlease_ref=${IDEMLEASE_REF:-HEAD}
goidempotency_src=${GOIDEMPOTENCY_SRC:-https://github.com/faustbrian/go-idempotency.git}
goidempotency_ref=${GOIDEMPOTENCY_REF:-HEAD}

# physical PATH: PATH without symbolic links, made absolute; it need not exist.
physical() {
  local p=$1 rest=""
  [[ $p = /* ]] || p=$PWD/$p
  while [ ! -d "$p" ]; do
    rest=/$(basename "$p")$rest
    p=$(dirname "$p")
  done
  echo "$(cd "$p" && pwd -P)$rest"
}
scratch=$(physical "$scratch")
case "$scratch/" in
"$repo"/*) die "the scratch directory $scratch is inside the repository $repo" ;;
esac
top=${scratch%/}/
case "$repo/" in
"$top"*) die "the scratch directory $scratch holds the repository $repo" ;;
esac
mkdir -p "$scratch"
export GOWORK=off

# clone SRC REF DEST: a fresh clone of SRC at REF in DEST.
clone() {
  rm -rf "$3"
  git clone --quiet "$1" "$3"
  git -C "$3" checkout --quiet --detach "$2"
  echo "build.sh: $1 at $(git -C "$3" rev-parse HEAD)" >&2
}
clone "$idemlease_src" "$idemlease_ref" "$scratch/idemlease"
clone "$goidempotency_src" "$goidempotency_ref" "$scratch/go-idempotency"

# go-idempotency's postgres package imports github.com/faustbrian/go-migrations
# (for GoMigration, which peers-run never calls), which the proxy refuses
# too: a stand-in declares the names that package compiles against.
rm -rf "$scratch/go-migrations"
mkdir -p "$scratch/go-migrations"
cat >"$scratch/go-migrations/go.mod" <<'MOD'
module github.com/faustbrian/go-migrations

go 1.22
MOD
cat >"$scratch/go-migrations/migrations.go" <<'GO'
// Package migrations stands in for github.com/faustbrian/go-migrations
// with the names go-idempotency/postgres compiles against.
package migrations

type Version uint

type TransactionMode int

const TransactionModeDefault TransactionMode = 0

type Migration struct {
	Version  Version
	Name     string
	Mode     TransactionMode
	Up, Down string
}

func NewMigration(v Version, name string, mode TransactionMode, up, down string) (Migration, error) {
	return Migration{Version: v, Name: name, Mode: mode, Up: up, Down: down}, nil
}
GO

run=$scratch/run
rm -rf "$run"
mkdir -p "$run"
for f in "$here"/*.go; do
  sed '/^\/\/go:build ignore$/d' "$f" >"$run/$(basename "$f")"
done
# Every local module is required and replaced by its directory: bench/peers
# and its own local replacements (the root module, bench, the backends bench
# needs), the clones and the stand-in. Required from the start, they put
# their dependencies in the graph, so that tidy takes pgx, go-redis and
# valkey-go at the versions they require rather than the newest.
{
  echo "github.com/stagedoor/once/bench/peers $peers"
  (cd "$peers" && go list -mod=readonly -m -f '{{with .Replace}}{{if not .Version}}{{$.Path}} {{.Dir}}{{end}}{{end}}' all)
  echo "github.com/repenguin22/idemlease $scratch/idemlease"
  echo "github.com/repenguin22/idemlease/pgstore $scratch/idemlease/pgstore"
  echo "github.com/repenguin22/idemlease/redistore $scratch/idemlease/redistore"
  echo "github.com/faustbrian/go-idempotency $scratch/go-idempotency"
  echo "github.com/faustbrian/go-migrations $scratch/go-migrations"
} | {
  printf 'module once-peers-run\n\ngo 1.26.0\n\n'
  while read -r path dir; do
    printf 'require %s v0.0.0-00010101000000-000000000000\n' "$path"
    printf 'replace %s => %s\n' "$path" "$dir"
  done
} >"$run/go.mod"

(cd "$run" && go mod tidy && go build -o "$scratch/peers-run" .)
echo "$scratch/peers-run"
