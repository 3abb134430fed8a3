# Shared set-up for scripts/demo.sh and scripts/test.sh: make sure Go (the
# version go.mod names) is on PATH, installing it from the Go module proxy
# when it is missing or too old, and install Debian packages when needed.
# Sourced, not run.

GO_VERSION="${GO_VERSION:-1.26.8}"

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  log "installing with apt: $*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
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
  command -v curl >/dev/null 2>&1 && command -v unzip >/dev/null 2>&1 || apt_install curl unzip ca-certificates
  local arch
  case "$(uname -m)" in
    x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;;
  esac
  # The Go module proxy serves every Go toolchain as a module zip.
  local url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${GO_VERSION}.linux-${arch}.zip"
  local tmp
  tmp=$(mktemp -d)
  log "installing Go ${GO_VERSION} from ${url}"
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
