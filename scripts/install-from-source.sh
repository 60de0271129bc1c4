#!/usr/bin/env bash
# Installs the kubelet from this checkout: builds a release with the repository's own toolchain
# (bun comes from npm), then runs that release's install.sh on it, so a source install gets the
# same checksum check, config file and unit as a download.
#
#   bash scripts/install-from-source.sh [--systemd] [install.sh options]     (as root; from another account: sudo bash …)
#
# Defaults to --install-docker --no-systemd (run pods by hand with `kubelet runonce`); --systemd
# also installs and starts kubelet.service. Needs Node.js >= 20 with npm.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { printf 'install-from-source.sh: %s\n' "$*" >&2; exit 1; }

args=(--install-docker)
systemd=0
for arg in "$@"; do
  if [ "$arg" = --systemd ]; then systemd=1; else args+=("$arg"); fi
done
[ "$systemd" = 1 ] || args+=(--no-systemd)

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NODE_HOWTO="install NodeSource's Node.js 20 (it bundles npm): curl -fsSL https://deb.nodesource.com/setup_20.x | bash - && apt-get install -y nodejs (as root; from another account with sudo before each)"
if ! command -v npm >/dev/null || [ "$(node_major)" -lt 20 ]; then
  # Debian's npm package depends on Debian's nodejs: install the pair only when that nodejs is new
  # enough (Debian 13), never over another nodejs (NodeSource's conflicts with Debian's npm).
  candidate=$(apt-cache policy nodejs 2>/dev/null | sed -n 's/^ *Candidate: \([0-9]*\).*/\1/p')
  if ! command -v node >/dev/null && [ "$(id -u)" = 0 ] && [ "${candidate:-0}" -ge 20 ]; then
    printf '==> installing Node.js and npm (apt-get install nodejs npm) to build the kubelet\n' >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
  else
    die "building needs Node.js >= 20 with npm (found: $(node --version 2>/dev/null || echo none); this distribution's nodejs: ${candidate:-none}): $NODE_HOWTO"
  fi
fi
[ -x node_modules/.bin/bun ] || npm ci --no-audit --no-fund >&2
# Only this architecture's binaries (install.sh picks among them by libc and CPU); each other target
# would mean downloading another bun runtime.
case "$(uname -m)" in
x86_64 | amd64) targets=linux-x64,linux-x64-baseline,linux-x64-musl ;;
aarch64 | arm64) targets=linux-arm64,linux-arm64-musl ;;
*) die "unsupported architecture \"$(uname -m)\": the kubelet builds for x86_64 and aarch64 (Linux)" ;;
esac
node_modules/.bin/bun build.ts --release --targets "$targets" >&2
exec sh dist/release/install.sh --base-url "file://$PWD/dist/release" "${args[@]}"
