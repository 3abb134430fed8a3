#!/usr/bin/env bash
# check-lean-core.sh [REPO]: a new module that imports only the core
# (github.com/stagedoor/once) and its three backends, with a replace to the
# checkout REPO (default: this one), must not have plotting, CLI, proxy,
# logging, metrics or OpenTelemetry SDK modules in its `go mod graph`.
# Fails, listing them, when it does.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
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
cd "$dir"
export GOWORK=off GOFLAGS=-mod=mod
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
echo "check-lean-core: $(wc -l <<<"$modules") modules in the graph, none of: $forbidden" >&2
sed 's/^/  /' <<<"$modules" >&2
