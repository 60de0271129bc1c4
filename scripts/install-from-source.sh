#!/usr/bin/env bash
# Installs the kubelet from this checkout: builds a release with the repository's own toolchain
# (bun comes from npm), then runs that release's install.sh on it, so a source install gets the
# same checksum check, config file and unit as a download.
#
#   sudo bash scripts/install-from-source.sh [--systemd] [install.sh options]
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

if ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    printf '==> installing Node.js and npm (apt-get install nodejs npm) to build the kubelet\n' >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
  else
    die "building needs Node.js >= 20 with npm: install them (apt-get install nodejs npm), then run this again"
  fi
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || die "building needs Node.js >= 20, this is $(node --version): see the README's Node.js note"

[ -x node_modules/.bin/bun ] || npm ci --no-audit --no-fund >&2
node_modules/.bin/bun build.ts --release >&2
exec sh dist/release/install.sh --base-url "file://$PWD/dist/release" "${args[@]}"
