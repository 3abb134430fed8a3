# shellcheck shell=bash
# Shared set-up for the scripts: Go on PATH (installed from the Go module
# proxy when missing), Debian packages when missing, timed phases, free
# loopback ports, and a record of what the script started so that it stops
# it on exit and can prove nothing of its own is left running.
# Sourced, not run.

GO_VERSION="${GO_VERSION:-1.26.8}"

log() { printf '==> %s\n' "$*" >&2; }

die() {
  log "FAILED: $*"
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_install WHY PACKAGE...: installs Debian packages, saying first which
# and why. It tries the package lists the machine has, and runs apt-get
# update (saying so) only when that fails.
APT_UPDATED=0
apt_install() {
  local why=$1
  shift
  log "installing with apt-get: $* ($why)"
  if as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; then return 0; fi
  if [ "$APT_UPDATED" = 0 ]; then
    log "apt-get update: the package lists are missing or out of date"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local v
  v=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  # Go 1.21+ reads go.mod's go line and fetches a newer toolchain itself.
  [ -n "$v" ] && [ "$(printf '%s\n1.21\n' "$v" | sort -V | head -n1)" = "1.21" ]
}

ensure_go() {
  [ -x /usr/local/go/bin/go ] && export PATH="/usr/local/go/bin:$PATH"
  [ -x "$HOME/.local/go/bin/go" ] && export PATH="$HOME/.local/go/bin:$PATH"
  go_ok && return 0
  command -v curl >/dev/null 2>&1 && command -v unzip >/dev/null 2>&1 || apt_install "to download Go ${GO_VERSION}, which is missing" curl unzip ca-certificates
  local arch
  case "$(uname -m)" in
    x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;;
  esac
  # The Go module proxy serves every Go toolchain as a module zip.
  local url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${GO_VERSION}.linux-${arch}.zip"
  local tmp
  tmp=$(mktemp -d)
  log "installing Go ${GO_VERSION} into $HOME/.local/go (go is missing or older than 1.21), from ${url}"
  curl -fsSL -o "$tmp/go.zip" "$url"
  unzip -q "$tmp/go.zip" -d "$tmp"
  mkdir -p "$HOME/.local"
  rm -rf "$HOME/.local/go"
  mv "$tmp/golang.org/toolchain@v0.0.1-go${GO_VERSION}.linux-${arch}" "$HOME/.local/go"
  chmod +x "$HOME/.local/go/bin/"* "$HOME/.local/go/pkg/tool/"*/* 2>/dev/null || true
  rm -rf "$tmp"
  export PATH="$HOME/.local/go/bin:$PATH"
  go version >&2
}

# --- timed phases ----------------------------------------------------------
# phase_begin NAME ... phase_end: the time of each phase is logged at its end
# and listed by phase_summary; a phase still open when the script exits is
# listed as failed.

PHASE_NAME=""
PHASE_T0=""
PHASE_LINES=()
SCRIPT_T0=$EPOCHREALTIME

seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

phase_begin() {
  [ -z "$PHASE_NAME" ] || phase_end
  PHASE_NAME=$1
  PHASE_T0=$EPOCHREALTIME
  log "phase: $PHASE_NAME"
}

phase_end() {
  [ -n "$PHASE_NAME" ] || return 0
  local dt
  dt=$(seconds_since "$PHASE_T0")
  PHASE_LINES+=("$(printf '%8s s  %s%s' "$dt" "$PHASE_NAME" "${1:-}")")
  log "phase: $PHASE_NAME: ${dt} s${1:-}"
  PHASE_NAME=""
}

phase_summary() {
  [ -z "$PHASE_NAME" ] || phase_end "  FAILED"
  [ "${#PHASE_LINES[@]}" -gt 0 ] || return 0
  printf '\nphase times:\n' >&2
  printf '%s\n' "${PHASE_LINES[@]}" >&2
  printf '%8s s  total\n' "$(seconds_since "$SCRIPT_T0")" >&2
}

# --- what the script started ----------------------------------------------
# on_exit CMD: run CMD (a string, eval'd) on exit, last registered first.
# own_pid NAME PID: a daemon of ours; check_none_left fails while it runs.
# note_left_running WHAT HOW: a system service the script started because it
# was installed but down; it is left running and printed with how to stop it.

CLEANUPS=()
OWNED_PIDS=()
LEFT_RUNNING=()

on_exit() { CLEANUPS+=("$1"); }

own_pid() { OWNED_PIDS+=("$1:$2"); }

note_left_running() { LEFT_RUNNING+=("$1 (stop it with: $2)"); }

run_cleanups() {
  local i
  for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do
    eval "${CLEANUPS[i]}" || log "cleanup failed: ${CLEANUPS[i]}"
  done
  CLEANUPS=()
}

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# wait_gone PID: up to 10 s for a stopped daemon to exit.
wait_gone() {
  local _
  for _ in $(seq 100); do pid_alive "$1" || return 0; sleep 0.1; done
  return 1
}

# check_none_left fails when a daemon this script started still runs.
# Checked daemons are forgotten, so a second call checks only newer ones.
check_none_left() {
  local e name pid left=0
  [ "${#OWNED_PIDS[@]}" -gt 0 ] || return 0
  for e in "${OWNED_PIDS[@]}"; do
    name=${e%:*} pid=${e##*:}
    wait_gone "$pid" || { log "still running after the script stopped it: $name (pid $pid)"; left=1; }
  done
  [ "$left" = 0 ] || return 1
  log "none of the ${#OWNED_PIDS[@]} daemons this script started is left running"
  OWNED_PIDS=()
}

print_left_running() {
  [ "${#LEFT_RUNNING[@]}" -gt 0 ] || return 0
  log "started because installed but down, and left running as system services:"
  local e
  for e in "${LEFT_RUNNING[@]}"; do log "  $e"; done
}

# --- loopback ports ----------------------------------------------------------

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT SECONDS: until something listens on 127.0.0.1:PORT.
wait_port() {
  local _
  for _ in $(seq $(($2 * 10))); do port_open "$1" && return 0; sleep 0.1; done
  return 1
}

# free_port prints a loopback port nothing listens on, with COUNT-1 free
# ports after it (free_port 6 for a six-node cluster).
free_port() {
  local count=${1:-1} p i ok _
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 20000))
    ok=1
    for ((i = 0; i < count; i++)); do
      if port_open $((p + i)); then ok=0; break; fi
    done
    [ "$ok" = 1 ] && { echo "$p"; return 0; }
  done
  return 1
}

# redact hides the password of a URL for logs.
redact() { sed -E 's#(://[^:/@]*:)[^@/]*@#\1***@#' <<<"$1"; }

# --- tools -------------------------------------------------------------------

# ensure_staticcheck VERSION sets STATICCHECK to a staticcheck of VERSION:
# the one on PATH when it is that version; else one built into
# ~/.cache/once-tools/staticcheck-VERSION, once, and reused by later runs.
ensure_staticcheck() {
  local v=$1 dir
  if command -v staticcheck >/dev/null 2>&1 && staticcheck -version 2>/dev/null | grep -qF "(${v#v})"; then
    STATICCHECK=$(command -v staticcheck)
    return 0
  fi
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/once-tools/staticcheck-$v"
  STATICCHECK=$dir/staticcheck
  if [ -x "$STATICCHECK" ] && "$STATICCHECK" -version 2>/dev/null | grep -qF "(${v#v})"; then return 0; fi
  log "installing staticcheck $v into $dir (go install honnef.co/go/tools/cmd/staticcheck@$v), for the staticcheck phase"
  GOBIN=$dir GOWORK=off go install "honnef.co/go/tools/cmd/staticcheck@$v"
}
