#!/usr/bin/env bash
# check-lean-core.sh [REPO]: a new module that imports only the core
# (github.com/stagedoor/once) and its three backends, with a replace to the
# checkout REPO (default: this one), must not have plotting, CLI, proxy,
# logging, metrics or OpenTelemetry SDK modules in its `go mod graph`; and
# the core's go.mod must require directly only pgx, go-redis and testify.
# Fails, listing the offenders, when either is not so.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
allowed_direct='github.com/jackc/pgx/v5 github.com/redis/go-redis/v9 github.com/stretchr/testify'
forbidden='gonum|alecthomas/kong|toxiproxy|rs/zerolog|prometheus|go\.opentelemetry\.io/otel/sdk'
dir=$(mktemp -d "${TMPDIR:-/tmp}/once-lean.XXXXXX")
trap 'rm -rf "$dir"' EXIT
cat >"$dir/go.mod" <<MOD
module example.com/leancheck

go 1.26.0

require github.com/stagedoor/once v0.0.0-00010101000000-000000000000

replace github.com/stagedoor/once => $repo
MOD
cat >"$dir/main.go" <<'GO'
package main

import (
	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
)

var (
	_ = once.New
	_ = memory.New
	_ = postgres.New
	_ = redisstore.New
)

func main() {}
GO
export GOWORK=off
failed=0
direct=$(cd "$repo" && go list -m -f '{{if not .Indirect}}{{if not .Main}}{{.Path}}{{end}}{{end}}' all | grep . | sort)
extra=$(comm -23 <(echo "$direct") <(tr ' ' '\n' <<<"$allowed_direct" | sort))
if [ -n "$extra" ]; then
  echo "check-lean-core: the core's go.mod requires more than $allowed_direct:" >&2
  sed 's/^/  /' <<<"$extra" >&2
  failed=1
fi
cd "$dir"
export GOFLAGS=-mod=mod
go mod tidy >/dev/null 2>"$dir/tidy.log" || { cat "$dir/tidy.log" >&2; exit 1; }
go build -o /dev/null .
graph=$(go mod graph)
modules=$(awk '{print $2}' <<<"$graph" | sed 's/@.*//' | grep -vxE 'go|toolchain' | sort -u)
bad=$(grep -E "$forbidden" <<<"$modules" || true)
if [ -n "$bad" ]; then
  echo "check-lean-core: a module importing only once and its backends pulls in:" >&2
  sed 's/^/  /' <<<"$bad" >&2
  exit 1
fi
[ "$failed" = 0 ] || exit 1
echo "check-lean-core: the core requires directly: $(echo $direct)" >&2
echo "check-lean-core: $(wc -l <<<"$modules") modules in the graph, none of: $forbidden" >&2
sed 's/^/  /' <<<"$modules" >&2
