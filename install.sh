#!/usr/bin/env bash
# Installs the kubelet on a Debian/Ubuntu node: a Docker Engine when none answers, the kubelet
# binary in /usr/local/bin, its directories, and (with --systemd) a service.
#
#   bash install.sh                      # from a checkout: builds dist/kubelet with the repo's toolchain
#   curl -fsSL <release>/install.sh | KUBELET_BINARY_URL=<release>/kubelet-linux-x64 bash
#   bash install.sh --systemd            # also installs and starts kubelet.service (manifests in /etc/kubelet/manifests)
set -euo pipefail

PREFIX=${PREFIX:-/usr/local}
MANIFESTS=${KUBELET_MANIFESTS:-/etc/kubelet/manifests}
ROOT_DIR=${KUBELET_ROOT_DIR:-/var/lib/kubelet}
with_systemd=0
for arg in "$@"; do
  case "$arg" in
    --systemd) with_systemd=1 ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==>\033[0m %s\n' "$*" >&2; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (sudo bash install.sh): it installs packages and writes $PREFIX/bin"

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  [ -n "${apt_updated:-}" ] || { apt-get update -q >/dev/null; apt_updated=1; }
  apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

ensure_docker() {
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then return; fi
  command -v dockerd >/dev/null || { say "installing Docker Engine (docker.io)"; apt_install docker.io ca-certificates; }
  if [ -d /run/systemd/system ]; then
    systemctl enable --now docker.service >/dev/null 2>&1 || true
  fi
  if ! docker info >/dev/null 2>&1; then
    say "starting dockerd (no systemd here; log in /var/log/dockerd.log)"
    setsid dockerd >/var/log/dockerd.log 2>&1 &
  fi
  for _ in $(seq 100); do docker info >/dev/null 2>&1 && return; sleep 0.2; done
  die "the Docker Engine did not come up: see /var/log/dockerd.log or 'journalctl -u docker'"
}

fetch_binary() {
  local out=$1 here
  if [ -n "${KUBELET_BINARY_URL:-}" ]; then
    say "downloading $KUBELET_BINARY_URL"
    command -v curl >/dev/null || apt_install curl ca-certificates
    curl -fsSL "$KUBELET_BINARY_URL" -o "$out"
    return
  fi
  here=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" 2>/dev/null && pwd || true)
  [ -n "$here" ] && [ -f "$here/build.ts" ] && [ -f "$here/package.json" ] ||
    die "not in a kubelet checkout: set KUBELET_BINARY_URL to a release binary"
  command -v npm >/dev/null || { say "installing Node.js and npm (to build)"; apt_install nodejs npm; }
  say "building the kubelet from $here"
  (cd "$here" && { [ -x node_modules/.bin/bun ] || npm install --no-audit --no-fund >&2; } && node_modules/.bin/bun build.ts >&2)
  cp "$here/dist/kubelet" "$out"
}

install_service() {
  [ -d /run/systemd/system ] || die "--systemd: this machine does not run systemd"
  cat >/etc/systemd/system/kubelet.service <<UNIT
[Unit]
Description=kubelet: keeps this node's Docker containers matching its pods
After=docker.service network-online.target
Wants=docker.service

[Service]
ExecStart=$PREFIX/bin/kubelet run --config $MANIFESTS --root_dir $ROOT_DIR --log_format json
Restart=always
RestartSec=2
KillMode=process

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now kubelet.service
  say "kubelet.service started: journalctl -u kubelet -f"
}

ensure_docker
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
fetch_binary "$tmp"
install -D -m 0755 "$tmp" "$PREFIX/bin/kubelet"
mkdir -p "$MANIFESTS" "$ROOT_DIR"
say "installed $("$PREFIX/bin/kubelet" --version)"
[ "$with_systemd" = 1 ] && install_service
say "next: kubelet runonce -c <dir of pod manifests>   (or: kubelet run -c $MANIFESTS)"
