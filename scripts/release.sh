#!/usr/bin/env bash
# release.sh VERSION: releases every module of the repository at VERSION
# (vMAJOR.MINOR.PATCH, with an optional -PRERELEASE), as go-redis extra/ and
# OpenTelemetry contrib release their nested modules:
#   1. tags the core (github.com/stagedoor/once) VERSION at HEAD;
#   2. in dependency order, sets every nested module's require of the core
#      and of the other nested modules to VERSION, drops its replace
#      directives, tidies it, commits, and tags it DIR/VERSION (the tag a Go
#      module in a subdirectory is fetched by); the modules it requires
#      are resolved from this clone's tags, never from the network;
#   3. commits "back to development": the replace directives return, the
#      requires stay at VERSION, so that a nested module built with its own
#      go.mod in the repository uses the code beside it.
# It pushes nothing, and prints the push command. It refuses a tree with
# uncommitted changes or a VERSION already tagged. Third-party modules come
# from the local module cache first, then from GOPROXY.
# scripts/check-release.sh rehearses it in a scratch clone.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

VERSION=${1:-}
[[ "$VERSION" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]] ||
  die "usage: scripts/release.sh vMAJOR.MINOR.PATCH[-PRERELEASE] (got '${VERSION}')"
[[ "$VERSION" =~ ^v[01]\. ]] || die "$VERSION: a major version above 1 needs a /vN module path first"
[ -z "$(git status --porcelain)" ] || die "uncommitted changes: release a committed tree"
ensure_go

CORE=github.com/stagedoor/once
REPO=$(pwd)
mapfile -t NESTED < <(find . -name go.mod -not -path './go.mod' -not -path './.git/*' -not -path '*/testdata/*' -printf '%h\n' | sed 's#^\./##' | sort)
tag_of() { if [ "$1" = . ]; then echo "$VERSION"; else echo "$1/$VERSION"; fi; }
for m in . "${NESTED[@]}"; do
  ! git rev-parse -q --verify "refs/tags/$(tag_of "$m")" >/dev/null || die "tag $(tag_of "$m") exists already"
done

module_path() { awk '$1 == "module" { print $2; exit }' "$1/go.mod"; }
# stagedoor_requires DIR: the modules of this repository that DIR requires,
# or replaces (a module its requirements need, which tidy may leave out of
# its require lines).
stagedoor_requires() {
  awk -v core="$CORE" '
    /^require \($/ { inreq = 1; next }
    inreq && /^\)$/ { inreq = 0; next }
    inreq && ($1 == core || index($1, core "/") == 1) { print $1 }
    ($1 == "require" || $1 == "replace") && ($2 == core || index($2, core "/") == 1) { print $2 }
  ' "$1/go.mod" | sort -u
}
# dir_of PATH: the directory of the module PATH, relative to the root.
dir_of() { if [ "$1" = "$CORE" ]; then echo .; else echo "${1#"$CORE"/}"; fi; }

# The go command resolves this repository's modules from its own tags: a
# scratch module cache (so that nothing tagged here lands in the user's;
# RELEASE_GOMODCACHE names another, as check-release.sh does),
# the repository reached by git through a URL rewrite, and no checksum
# database for them. Third-party modules: the local module cache, then
# GOPROXY.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/once-release.XXXXXX")
on_exit "chmod -R u+w $(printf %q "$scratch") 2>/dev/null; rm -rf $(printf %q "$scratch")"
trap run_cleanups EXIT
gorel() {
  env GOWORK=off GOFLAGS=-mod=mod GOMODCACHE="${RELEASE_GOMODCACHE:-$scratch/modcache}" GOPRIVATE="$CORE" \
    GOPROXY="file://$(go env GOMODCACHE)/cache/download,${GOPROXY:-$(go env GOPROXY)}" \
    GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0="url.$REPO.insteadOf" GIT_CONFIG_VALUE_0="https://$CORE" \
    GIT_CONFIG_KEY_1=protocol.file.allow GIT_CONFIG_VALUE_1=always go "$@"
}

log "release $VERSION: tagging the core at $(git rev-parse --short HEAD)"
git tag -m "$CORE $VERSION" "$VERSION"
released=("$CORE")
todo=("${NESTED[@]}")
while [ "${#todo[@]}" -gt 0 ]; do
  level=() rest=()
  for m in "${todo[@]}"; do
    ready=1
    for p in $(stagedoor_requires "$m"); do
      [[ " ${released[*]} " == *" $p "* ]] || ready=0
    done
    if [ "$ready" = 1 ]; then level+=("$m"); else rest+=("$m"); fi
  done
  [ "${#level[@]}" -gt 0 ] || die "the nested modules ${rest[*]} require each other in a cycle"
  for m in "${level[@]}"; do
    args=()
    for p in $(stagedoor_requires "$m"); do args+=("-require=$p@$VERSION" "-dropreplace=$p"); done
    (cd "$m" && gorel mod edit "${args[@]}" && gorel mod tidy)
    ! grep -q '^replace' "$m/go.mod" || die "$m/go.mod still has a replace directive"
    git add "$m/go.mod" "$m/go.sum"
  done
  git commit -q -m "release $VERSION: ${level[*]} require this repository's modules at $VERSION"
  for m in "${level[@]}"; do
    git tag -m "$(module_path "$m") $VERSION" "$(tag_of "$m")"
    released+=("$(module_path "$m")")
    log "tagged $(tag_of "$m")"
  done
  todo=("${rest[@]}")
done

# Back to development: each nested module builds against the code beside it.
for m in "${NESTED[@]}"; do
  args=()
  for p in $(stagedoor_requires "$m"); do
    up=$(sed -E 's#[^/]+#..#g' <<<"$m")
    target=$(dir_of "$p")
    if [ "$target" = . ]; then target=$up; else target=$up/$target; fi
    args+=("-replace=$p=$target")
  done
  (cd "$m" && gorel mod edit "${args[@]}" && gorel mod tidy)
  git add "$m/go.mod" "$m/go.sum"
done
git commit -q -m "after $VERSION: the nested modules build against the code beside them again (replace), requiring $VERSION"

tags=()
for m in . "${NESTED[@]}"; do tags+=("$(tag_of "$m")"); done
log "released $VERSION: ${#tags[@]} tags, and $(git rev-list --count "$VERSION"..HEAD) commits after the core's tag"
log "publish with: git push origin HEAD ${tags[*]}"
