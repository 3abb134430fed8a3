#!/usr/bin/env bash
# check-release.sh: rehearses a release of the committed HEAD with no
# network and no replace directive, as a user's go command will see it:
#   1. clones the repository into a scratch directory and runs
#      scripts/release.sh there at a rehearsal tag;
#   2. serves every module at that tag from a local file GOPROXY, whose
#      module zips the go command itself makes from the clone's tags (as
#      the public proxy makes them from the repository's);
#   3. in a new consumer module, go gets every module at the tag and builds
#      every package of every one of them, and go installs
#      github.com/stagedoor/once/cmd/once@<tag> and runs it.
# Third-party modules come from the local module cache (file GOPROXY), so a
# missing one fails rather than being fetched. The rehearsal's own modules
# are extracted into the local module cache, so that the build reuses the
# build cache of its dependencies, and removed from it on exit; a lock keeps
# two rehearsals apart.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_go

CORE=github.com/stagedoor/once
# A tag of its own per run: Go indexes a module cache directory once, by its
# path, so a directory of an earlier rehearsal with the same tag would be read
# from a stale index.
TAG=v0.0.0-rehearsal.$(date +%s)
REPO=$(pwd)
MODCACHE=$(go env GOMODCACHE)
LOCAL_PROXY="file://$MODCACHE/cache/download"
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
  log "check-release: uncommitted changes are not rehearsed: it releases the commit HEAD ($(git rev-parse --short HEAD))"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/once-check-release.XXXXXX")
mkdir -p "$MODCACHE/cache"
exec 9>"$MODCACHE/cache/once-check-release.lock"
flock 9

# forget_rehearsal removes the rehearsal's modules from the local module
# cache: the extracted directories and the downloaded files of TAG.
forget_rehearsal() {
  local d
  for d in "$MODCACHE/$CORE@$TAG" "$MODCACHE/$CORE"/*/*"@$TAG" "$MODCACHE/$CORE"/*"@$TAG"; do
    [ -e "$d" ] || continue
    chmod -R u+w "$d" && rm -rf "$d"
  done
  if [ -d "$MODCACHE/cache/download/$CORE" ]; then
    find "$MODCACHE/cache/download/$CORE" -path "*/@v/$TAG.*" -delete
    find "$MODCACHE/cache/download/$CORE" -path '*/@v/list' -exec sed -i "/^$TAG\$/d" {} +
    find "$MODCACHE/cache/download/$CORE" -path '*/@v/list' -empty -delete
    find "$MODCACHE/cache/download/github.com/stagedoor" -depth -type d -empty -delete
  fi
  [ ! -d "$MODCACHE/github.com/stagedoor" ] || find "$MODCACHE/github.com/stagedoor" -depth -type d -empty -delete
}
forget_rehearsal
# release.sh, pointed at the local module cache, leaves a git clone of the
# scratch repository in its cache/vcs: removed on exit too.
mkdir -p "$MODCACHE/cache/vcs"
ls "$MODCACHE/cache/vcs" >"$scratch/vcs.before"
forget_new_vcs() {
  local e
  for e in "$MODCACHE"/cache/vcs/*; do
    grep -qxF "${e##*/}" "$scratch/vcs.before" || rm -rf "$e"
  done
}
on_exit "forget_new_vcs; forget_rehearsal; chmod -R u+w $(printf %q "$scratch") 2>/dev/null; rm -rf $(printf %q "$scratch")"
trap run_cleanups EXIT

# 1. The release, in a scratch clone.
git clone -q "$REPO" "$scratch/repo"
git -C "$scratch/repo" config user.name "check-release"
git -C "$scratch/repo" config user.email "check-release@localhost"
(cd "$scratch/repo" && RELEASE_GOMODCACHE=$MODCACHE GOPROXY="$LOCAL_PROXY,off" scripts/release.sh "$TAG") 2>"$scratch/release.log" ||
  { cat "$scratch/release.log" >&2; die "scripts/release.sh $TAG in a scratch clone"; }
mapfile -t TAGS < <(git -C "$scratch/repo" tag --list "$TAG" "*/$TAG")
MODULES=()
for t in "${TAGS[@]}"; do
  if [ "$t" = "$TAG" ]; then MODULES+=("$CORE"); else MODULES+=("$CORE/${t%/"$TAG"}"); fi
done
want=$(find "$scratch/repo" -name go.mod -not -path '*/.git/*' -not -path '*/testdata/*' | wc -l)
[ "${#MODULES[@]}" = "$want" ] || die "release.sh tagged ${#MODULES[@]} modules of $want"
for t in "${TAGS[@]}"; do
  [ "$t" = "$TAG" ] && continue
  ! git -C "$scratch/repo" show "$t:${t%/"$TAG"}/go.mod" | grep -q '^replace' || die "$t: go.mod has a replace directive"
done

# 2. The local file GOPROXY: the go command fetches each module at TAG from
# the scratch clone's tags (git, through a URL rewrite) into a module cache
# whose download directory is then served as a proxy.
env GOWORK=off GOFLAGS=-modcacherw GOMODCACHE="$scratch/proxy" GOPROXY=off GOPRIVATE="$CORE" \
  GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0="url.$scratch/repo.insteadOf" GIT_CONFIG_VALUE_0="https://$CORE" \
  GIT_CONFIG_KEY_1=protocol.file.allow GIT_CONFIG_VALUE_1=always \
  go mod download "${MODULES[@]/%/@$TAG}"

# 3. A consumer: no replace, nothing from the network, checksums from the
# downloads themselves (no checksum database is reachable without network).
consumer() {
  env GOWORK=off GOFLAGS=-mod=mod GOSUMDB=off GONOSUMDB= GOPRIVATE= GONOPROXY= \
    GOPROXY="file://$scratch/proxy/cache/download,$LOCAL_PROXY,off" "$@"
}
mkdir "$scratch/consumer"
cd "$scratch/consumer"
consumer go mod init example.com/consumer 2>/dev/null
consumer go get "${MODULES[@]/%/@$TAG}" 2>"$scratch/get.log" || { cat "$scratch/get.log" >&2; die "go get of every module at $TAG"; }
! grep -q replace go.mod || die "the consumer's go.mod has a replace directive"
got=$(consumer go list -m -f '{{if eq .Version "'"$TAG"'"}}{{if not .Replace}}{{.Path}}{{end}}{{end}}' all | grep -c .)
[ "$got" = "${#MODULES[@]}" ] || die "the consumer's build list has $got of the ${#MODULES[@]} modules at $TAG"
# Every package compiled (without linking the commands: the install below
# links one).
consumer go list -export -f '{{if not .Export}}{{.ImportPath}}: not compiled{{end}}' "$CORE/..." >"$scratch/export.log"
[ ! -s "$scratch/export.log" ] || die "$(cat "$scratch/export.log")"
cd "$scratch"
consumer env GOBIN="$scratch/bin" go install "$CORE/cmd/once@$TAG"
"$scratch/bin/once" --help >/dev/null || die "the installed once does not run"
log "check-release: ${#MODULES[@]} modules released at $TAG in a scratch clone, served by a file GOPROXY, fetched, built and installed by a consumer without replace or network"
