#!/bin/sh
# Installs the kubelet on a Linux node from a release directory (built by `npm run release`):
# picks the binary for this machine, verifies it against SHA256SUMS, installs it atomically,
# writes a commented config file and a systemd unit once, and starts the service.
#
#   curl -fsSL https://<release>/install.sh | sh -s -- [options]
#
# POSIX sh (dash, busybox ash), so it runs on any node; `sh install.sh --help` lists the options.
set -eu

# The release directory this script was published with; filled in by `bun build.ts --release --base-url URL`.
KUBELET_RELEASE_URL=''
PROJECT_RELEASES=https://github.com/kubelet-project/kubelet/releases

usage() {
  cat <<'EOF'
Usage: curl -fsSL <release>/install.sh | sh -s -- [options]

Options (each also an environment variable; an option wins over its variable):
  --version X        KUBELET_VERSION         install version X (default: the release at the base URL)
  --base-url URL     KUBELET_BASE_URL        release directory holding kubelet-linux-* and SHA256SUMS
                                             (default: where this script was published, else the
                                             project's releases: latest, or vX with --version)
  --prefix DIR       KUBELET_PREFIX          install DIR/bin/kubelet (default /usr/local)
  --config-dir DIR   KUBELET_CONFIG_DIR      config.yaml goes here (default /etc/kubelet, or
                                             DIR/etc/kubelet for a --prefix other than /usr/local or /usr)
  --manifests DIR    KUBELET_MANIFESTS       pod manifests the service runs (default <config dir>/manifests)
  --no-systemd       KUBELET_NO_SYSTEMD=1    write no kubelet.service (KUBELET_UNIT_DIR: where it goes,
                                             default /etc/systemd/system)
  --install-docker   KUBELET_INSTALL_DOCKER=1  install docker.io (Debian/Ubuntu) when Docker is not reachable
  --uninstall        KUBELET_UNINSTALL=1     remove the binary and the unit; keep config, manifests, root dir
  --dry-run          KUBELET_DRY_RUN=1       print each step, change nothing
  -h, --help                                 this text

Without root: --prefix "$HOME/.local" --no-systemd
EOF
}

say() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}
usage_error() {
  printf 'install.sh: %s\nUsage: sh install.sh [options]; see sh install.sh --help\n' "$*" >&2
  exit 2
}

VERSION=${KUBELET_VERSION:-}
BASE_URL=${KUBELET_BASE_URL:-}
PREFIX=${KUBELET_PREFIX:-/usr/local}
CONFIG_DIR=${KUBELET_CONFIG_DIR:-}
MANIFESTS=${KUBELET_MANIFESTS:-}
NO_SYSTEMD=${KUBELET_NO_SYSTEMD:-0}
INSTALL_DOCKER=${KUBELET_INSTALL_DOCKER:-0}
UNINSTALL=${KUBELET_UNINSTALL:-0}
DRY_RUN=${KUBELET_DRY_RUN:-0}
UNIT_DIR=${KUBELET_UNIT_DIR:-/etc/systemd/system}
PROBE_ROOT=${KUBELET_PROBE_ROOT:-}

while [ $# -gt 0 ]; do
  option=$1
  case "$option" in
  --*=*)
    value=${option#*=}
    option=${option%%=*}
    ;;
  *) value=${2-} ;;
  esac
  case "$option" in
  --version | --base-url | --prefix | --config-dir | --manifests)
    if [ "$option" = "$1" ]; then
      [ $# -ge 2 ] || usage_error "$option needs a value"
      shift
    fi
    [ -n "$value" ] || usage_error "$option needs a value"
    case "$option" in
    --version) VERSION=${value#v} ;;
    --base-url) BASE_URL=$value ;;
    --prefix) PREFIX=$value ;;
    --config-dir) CONFIG_DIR=$value ;;
    --manifests) MANIFESTS=$value ;;
    esac
    ;;
  --no-systemd) NO_SYSTEMD=1 ;;
  --install-docker) INSTALL_DOCKER=1 ;;
  --uninstall) UNINSTALL=1 ;;
  --dry-run) DRY_RUN=1 ;;
  -h | --help)
    usage
    exit 0
    ;;
  *) usage_error "unknown option \"$1\"" ;;
  esac
  shift
done

# Absolute paths only: they end up in the unit's ExecStart and in config.yaml.
for path in "$PREFIX" "$CONFIG_DIR" "$MANIFESTS" "$UNIT_DIR"; do
  case "$path" in
  "" | /*) ;;
  *) usage_error "\"$path\" is a relative path: give --prefix, --config-dir and --manifests as absolute paths" ;;
  esac
done
PREFIX=${PREFIX%/}
case "$PREFIX" in
/usr/local | /usr | "") CONFIG_DIR=${CONFIG_DIR:-/etc/kubelet} ;;
*) CONFIG_DIR=${CONFIG_DIR:-$PREFIX/etc/kubelet} ;;
esac
MANIFESTS=${MANIFESTS:-$CONFIG_DIR/manifests}
BIN="$PREFIX/bin/kubelet"
CONFIG="$CONFIG_DIR/config.yaml"
UNIT="$UNIT_DIR/kubelet.service"
changes=0
tmp=''
tmp_binary=''

cleanup() {
  [ -z "$tmp_binary" ] || rm -f "$tmp_binary"
  [ -z "$tmp" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One change to the machine: announced, counted, and skipped (returns 1) in a dry run.
step() {
  changes=$((changes + 1))
  if [ "$DRY_RUN" = 1 ]; then
    say "dry run: would $*"
    return 1
  fi
  say "$*"
}

have() { command -v "$1" >/dev/null 2>&1; }

# sd_booted(3)'s test; KUBELET_SYSTEMD_RUNTIME_DIR lets the tests drive a stand-in systemctl.
systemd_running() { [ -d "${KUBELET_SYSTEMD_RUNTIME_DIR:-/run/systemd/system}" ] && have systemctl; }

# The ELF interpreter (PT_INTERP) a program asks for, read from its first 4 KiB (where the program headers and
# the interpreter's path sit); empty for a static program.
elf_interp() {
  dd if="$1" bs=4096 count=1 2>/dev/null | LC_ALL=C tr -c ' -~' '\n' | sed -n '/^\/.*\/ld-.*\.so[.0-9]*$/{p;q;}'
}

# The C library the system itself runs on: the one its /bin/sh is linked against (PT_INTERP: /lib/ld-musl-*
# is musl, /lib*/ld-linux* glibc), not whichever loaders happen to be installed: Debian's musl package puts
# /lib/ld-musl-x86_64.so.1 on a glibc system. A static /bin/sh: glibc when its loader is there, else musl
# when musl's is. KUBELET_PROBE_ROOT stands another root in for / (the tests' stand-in systems).
system_libc() {
  interp=$(elf_interp "$PROBE_ROOT/bin/sh")
  case "$interp" in
  *ld-musl-*)
    echo musl
    return
    ;;
  ?*)
    echo glibc
    return
    ;;
  esac
  for loader in "$PROBE_ROOT"/lib/ld-linux*.so.* "$PROBE_ROOT"/lib64/ld-linux*.so.*; do
    if [ -e "$loader" ]; then
      echo glibc
      return
    fi
  done
  for loader in "$PROBE_ROOT"/lib/ld-musl-*.so.1; do
    if [ -e "$loader" ]; then
      echo musl
      return
    fi
  done
  echo glibc
}

# The directories musl's loader searches: those of /etc/ld-musl-<arch>.path, else its built-in ones.
musl_lib_dirs() {
  for path_file in "$PROBE_ROOT"/etc/ld-musl-*.path; do
    if [ -r "$path_file" ]; then
      tr ':' '\n' <"$path_file"
      return
    fi
  done
  printf '%s\n' /lib /usr/local/lib /usr/lib
}

# What a musl build of bun needs besides the C library and this system lacks: libstdc++ and libgcc_s.
musl_missing_libs() {
  missing=''
  for lib in libstdc++.so.6 libgcc_s.so.1; do
    found=''
    for dir in $(musl_lib_dirs); do [ ! -e "$PROBE_ROOT$dir/$lib" ] || found=1; done
    [ -n "$found" ] || missing="$missing${missing:+ }$lib"
  done
  echo "$missing"
}

# How to install them here: Alpine's apk, else what to look for.
musl_libs_hint() {
  if [ -r "$PROBE_ROOT/etc/os-release" ] && grep -q '^ID=alpine' "$PROBE_ROOT/etc/os-release"; then
    echo "apk add libstdc++ libgcc"
  else
    echo "install the musl builds of libstdc++ and libgcc (Alpine: apk add libstdc++ libgcc)"
  fi
}

# The architecture's name in the release's assets (x64, arm64), or a refusal of this machine.
release_arch() {
  os=$(uname -s)
  machine=$(uname -m)
  [ "$os" = Linux ] || die "unsupported operating system \"$os\": kubelet releases are built for Linux (x86_64, aarch64)"
  case "$machine" in
  x86_64 | amd64) echo x64 ;;
  aarch64 | arm64) echo arm64 ;;
  *) die "unsupported architecture \"$machine\": kubelet releases are built for x86_64 and aarch64 (Linux)" ;;
  esac
}

# The release asset for a C library on this machine: kubelet-linux-<arch>[-musl|-baseline].
release_asset() { # arch libc
  if [ "$2" = musl ]; then
    echo "kubelet-linux-$1-musl"
  # The default x64 build needs AVX2 (Haswell, 2013); older CPUs get the baseline build.
  elif [ "$1" = x64 ] && [ -r /proc/cpuinfo ] && ! grep -q '^flags.* avx2' /proc/cpuinfo; then
    echo "kubelet-linux-x64-baseline"
  else
    echo "kubelet-linux-$1"
  fi
}

download() { # url file [what to do when it fails]
  case "$1" in
  file://*) cp "${1#file://}" "$2" 2>/dev/null || die "cannot read $1${3:+: $3}" ;;
  *)
    # The tool's own last error line goes into ours, so a failure is one line.
    if have curl; then
      err=$(curl -fsSL --retry 3 --connect-timeout 10 -o "$2" "$1" 2>&1) ||
        die "cannot download $1 ($(printf '%s\n' "${err:-curl failed}" | tail -n 1))${3:+: $3}"
    elif have wget; then
      # Options GNU and busybox wget share (busybox 1.35's wget crashes on -T).
      err=$(wget -q -O "$2" "$1" 2>&1) ||
        die "cannot download $1 ($(printf '%s\n' "${err:-wget failed}" | tail -n 1))${3:+: $3}"
    else
      die "neither curl nor wget is installed: install one (apt-get install curl) and run this again"
    fi
    ;;
  esac
}

sha256() {
  if have sha256sum; then
    sha256sum "$1" | cut -d' ' -f1
  elif have shasum; then
    shasum -a 256 "$1" | cut -d' ' -f1
  elif have openssl; then
    openssl dgst -sha256 -r "$1" | cut -d' ' -f1
  else
    die "no sha256sum, shasum or openssl to verify the download with: install coreutils"
  fi
}

# "0.1.0" from "kubelet v0.1.0 (commit abc1234, bun 1.4.5)"; empty when the binary does not run.
binary_version() { "$1" --version 2>/dev/null | sed -n 's/^kubelet v\([^ ]*\).*/\1/p'; }

# The release directory to download from (base) and what to do when it does not answer (hint): --base-url,
# else the URL this script was published for, else the project's releases.
choose_base_url() {
  if [ -n "$BASE_URL" ]; then
    base=$BASE_URL
    hint="check --base-url (KUBELET_BASE_URL): it must be the URL of a release directory (kubelet-linux-*, SHA256SUMS) that a web server serves"
  elif [ -n "$KUBELET_RELEASE_URL" ]; then
    base=$KUBELET_RELEASE_URL
    hint="this install.sh was published for $KUBELET_RELEASE_URL; give the URL the release directory is served at with --base-url URL"
  else
    base=$PROJECT_RELEASES/latest/download
    [ -z "$VERSION" ] || base=$PROJECT_RELEASES/download/v$VERSION
    hint="no --base-url was given, so the project's releases were tried; give the URL of your release directory (npm run release writes it to dist/release/) with --base-url URL"
  fi
  base=${base%/}
}

# The checksum SHA256SUMS gives an asset, or nothing.
sum_of() { awk -v f="$1" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/SHA256SUMS"; }

# Downloads an asset into tmp_binary and checks it against its checksum; sets new (its version, empty when it does
# not run here) and why (its first line of error then).
fetch_asset() { # asset checksum
  download "$base/$1" "$tmp_binary"
  actual=$(sha256 "$tmp_binary")
  [ "$actual" = "$2" ] ||
    die "checksum mismatch for $base/$1: SHA256SUMS says $2, the download is $actual; nothing was installed${installed:+ (v$installed at $BIN is untouched)}"
  chmod 0755 "$tmp_binary"
  new=$(binary_version "$tmp_binary")
  why=''
  [ -n "$new" ] || why=$("$tmp_binary" --version 2>&1 | head -n 1)
}

# A musl build's libraries, before it is downloaded: what to install when they are missing.
check_musl_libs() { # asset
  case "$1" in *-musl) ;; *) return 0 ;; esac
  missing=$(musl_missing_libs)
  [ -z "$missing" ] ||
    die "$1 (this system runs on musl) needs $missing besides the C library, which this system lacks: $(musl_libs_hint), then run this again; nothing was installed"
}

# Installs the release binary unless the one in place already has its checksum (sets binary_changed). The build
# for the system's C library first; when it does not run here, the other C library's build.
install_binary() {
  arch=$(release_arch)
  libc=$(system_libc)
  other_libc=musl
  [ "$libc" = glibc ] || other_libc=glibc
  asset=$(release_asset "$arch" "$libc")
  other=$(release_asset "$arch" "$other_libc")
  choose_base_url
  tmp=$(mktemp -d)
  download "$base/SHA256SUMS" "$tmp/SHA256SUMS" "$hint"
  expected=$(sum_of "$asset")
  [ -n "$expected" ] || die "$base/SHA256SUMS lists no $asset: that release has no binary for this machine"
  other_expected=$(sum_of "$other")
  installed=''
  if [ -f "$BIN" ]; then
    installed=$(binary_version "$BIN")
    current=$(sha256 "$BIN")
    if { [ "$current" = "$expected" ] || [ "$current" = "$other_expected" ]; } && [ -n "$installed" ] &&
      { [ -z "$VERSION" ] || [ "$installed" = "$VERSION" ]; }; then
      say "kubelet v$installed at $BIN is already the release at $base (same checksum): binary unchanged"
      return
    fi
  fi
  check_musl_libs "$asset"
  if [ -n "$installed" ]; then
    action="upgrade $BIN from v$installed with $base/$asset ($libc system)"
  else
    action="install $base/$asset as $BIN ($libc system)"
  fi
  binary_changed=1
  step "$action" || return 0
  mkdir -p "$PREFIX/bin" 2>/dev/null ||
    die "cannot create $PREFIX/bin: run as root (sudo sh), or choose --prefix \"\$HOME/.local\" --no-systemd"
  # A temporary file in the target directory, so the final mv is an atomic rename on one file system.
  tmp_binary=$(mktemp "$PREFIX/bin/.kubelet.XXXXXX") ||
    die "cannot write to $PREFIX/bin: run as root (sudo sh), or choose --prefix \"\$HOME/.local\" --no-systemd"
  fetch_asset "$asset" "$expected"
  if [ -z "$new" ] && [ -n "$other_expected" ]; then
    first_why=$why
    say "$asset does not run on this machine (${first_why:-no version}); trying $other"
    check_musl_libs "$other"
    fetch_asset "$other" "$other_expected"
    [ -n "$new" ] ||
      die "neither $asset (${first_why:-no version}) nor $other (${why:-no version}) runs on this machine ($(uname -sm), $libc): nothing was installed"
    asset=$other
  fi
  [ -n "$new" ] || die "$base/$asset does not run on this machine ($(uname -sm), $libc: ${why:-no version}): nothing was installed"
  [ -z "$VERSION" ] || [ "$new" = "$VERSION" ] ||
    die "$base holds kubelet v$new, not the requested v$VERSION: nothing was installed (check --base-url)"
  mv -f "$tmp_binary" "$BIN"
  tmp_binary=''
  say "kubelet v$new installed at $BIN${installed:+ (was v$installed)}"
}

# Octal permission bits of a file ("644"); GNU and busybox stat both take -c.
mode_of() { stat -c %a "$1" 2>/dev/null || echo 0; }

# Makes a file this script writes readable by its owner only (root:root when run as root): the config file
# and the unit name the credentials the kubelet accepts (CIS 4.1.1, 4.1.5, 4.1.9).
owner_only() {
  chmod 0600 "$1"
  [ "$(id -u)" != 0 ] || chown 0:0 "$1"
}

# An existing file made 0600 when others may read it (the operator's content is kept as it is).
tighten() { # file what
  [ -f "$1" ] || return 0
  case "$(mode_of "$1")" in
  600 | 400 | 0) return 0 ;;
  esac
  if step "chmod 600 $1 (was $(mode_of "$1"): $2 is for root only)"; then owner_only "$1"; fi
}

# The admin token the installed binary generates at its start (root_dir/admin-token), or nothing when that
# version has no admin token (an older release): local administration reads it instead of an open loopback.
admin_token_path() {
  "$BIN" print-config --config_file="" --admin_token_file=/dev/null >/dev/null 2>&1 || return 0
  root_dir=$("$BIN" print-config --config_file="" 2>/dev/null | sed -n 's/^root_dir: *//p')
  echo "${root_dir:-/var/lib/kubelet}/admin-token"
}

# The settings this script writes uncommented, for a node secure by default: no anonymous caller, no
# unauthenticated read-only port, and the admin token named (CIS 4.2.1, 4.2.4).
secure_settings() {
  printf '%s\n' --anonymous_auth=false --read_only_port=0
  [ -z "$admin_token" ] || printf '%s\n' "--admin_token_file=$admin_token"
}

write_config() {
  if [ -d "$MANIFESTS" ] || step "create $MANIFESTS (pod manifests)"; then
    mkdir -p "$MANIFESTS"
  fi
  admin_token=''
  [ ! -x "$BIN" ] || admin_token=$(admin_token_path)
  if [ -e "$CONFIG" ]; then
    say "keeping $CONFIG (an existing config file is never overwritten)"
    tighten "$CONFIG" "the config file"
  elif step "write $CONFIG (0600; anonymous_auth: false, read_only_port: 0, every other setting commented at its default; config: $MANIFESTS)"; then
    # Written by the binary itself, so every key, default and alias matches the version installed;
    # --config_file="" so that a config file already at /etc/kubelet (another --config-dir) is not copied.
    # Created 0600 from the start (umask), so it is never readable by others, not even for a moment.
    # shellcheck disable=SC2046 # one setting per line, none with spaces
    (umask 077 && "$BIN" print-config --commented --config "$MANIFESTS" --config_file="" $(secure_settings) >"$CONFIG.tmp")
    owner_only "$CONFIG.tmp"
    mv -f "$CONFIG.tmp" "$CONFIG"
    config_written=1
  fi
}

unit_text() {
  cat <<EOF
# Written by the kubelet's install.sh; rerunning it rewrites this file, so put changes in a drop-in
# (systemctl edit kubelet) and settings in $CONFIG.
[Unit]
Description=kubelet: keeps this node's Docker containers matching its pods
Documentation=https://github.com/kubelet-project/kubelet#readme
After=docker.service network-online.target
Wants=docker.service network-online.target

[Service]
ExecStart=$BIN run --config_file $CONFIG
# Without JavaScriptCore's optimizing JITs (DFG, FTL): at 110 pods 10-14 MB less resident memory and the JIT's
# threads' idle CPU gone, for ~1.4x the CPU on bulk work such as reading thousands of manifests (bench/results.md).
# A JSC option is read from the environment when the VM starts, so it cannot be compiled into the binary.
Environment=BUN_JSC_useDFGJIT=0
Restart=always
RestartSec=2
# stderr is not a TTY here, so the kubelet logs one JSON object per line, with a syslog priority.
StandardError=journal
SyslogIdentifier=kubelet

[Install]
WantedBy=multi-user.target
EOF
}

# Writes the unit when its text differs (sets unit_changed).
write_unit() {
  if [ -f "$UNIT" ] && [ "$(cat "$UNIT")" = "$(unit_text)" ]; then
    tighten "$UNIT" "the unit"
    return
  fi
  unit_changed=1
  step "write $UNIT (0600; ExecStart=$BIN run --config_file $CONFIG)" || return 0
  mkdir -p "$UNIT_DIR"
  (umask 077 && unit_text >"$UNIT.tmp")
  owner_only "$UNIT.tmp"
  mv -f "$UNIT.tmp" "$UNIT"
}

docker_reachable() {
  if have docker; then
    docker version >/dev/null 2>&1
  else
    socket=${DOCKER_HOST:-unix:///var/run/docker.sock}
    have curl && curl -fsS --max-time 5 --unix-socket "${socket#unix://}" http://localhost/_ping >/dev/null 2>&1
  fi
}

debian_like() { [ -r /etc/os-release ] && grep -Eq '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release; }

# Before anything is installed: what to do about Docker (sets docker_plan, and docker_warning for the end). An
# --install-docker this script cannot carry out stops it here, with nothing changed; a Docker it will install is
# announced with how it will run.
check_docker() {
  docker_plan=''
  docker_warning=''
  docker_reachable && return 0
  where=${DOCKER_HOST:-unix:///var/run/docker.sock}
  socket=${where#unix://}
  if [ "$(id -u)" != 0 ] && [ -S "$socket" ] && [ ! -w "$socket" ]; then
    docker_warning="Docker's socket $socket is not open to $(id -un): run the kubelet as root, or add $(id -un) to the socket's group (usermod -aG docker $(id -un)) and log in again"
    return 0
  fi
  if [ "$INSTALL_DOCKER" = 1 ]; then
    debian_like || die "--install-docker knows Debian and Ubuntu only: install Docker Engine (https://docs.docker.com/engine/install/); nothing was changed"
    [ "$(id -u)" = 0 ] || die "--install-docker needs root: rerun with sudo; nothing was changed"
    docker_plan=install
    if systemd_running; then
      docker_start="started by systemd (systemctl enable --now docker.service)"
    else
      docker_start="started as a background dockerd, since no systemd runs here, with Docker's default settings: the docker0 bridge network (172.17.0.0/16) with iptables NAT rules, its log in /var/log/dockerd.log; write /etc/docker/daemon.json first to change them"
    fi
    say "no Docker Engine answers at $where: --install-docker installs Docker Engine (apt-get install docker.io), $docker_start"
    return 0
  fi
  docker_warning="Docker is not reachable at $where; the kubelet waits for it. Install Docker Engine: apt-get install docker.io (Debian/Ubuntu; or rerun with --install-docker), or see https://docs.docker.com/engine/install/"
}

# --install-docker as check_docker announced it, or its warning (said after the install steps, as what is left to do).
install_docker() {
  [ -z "$docker_warning" ] || warn "$docker_warning"
  [ "$docker_plan" = install ] || return 0
  step "install Docker Engine (apt-get install docker.io), $docker_start" || return 0
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends docker.io ca-certificates >/dev/null
  if systemd_running; then
    systemctl enable --now docker.service >/dev/null
  elif ! docker_reachable && have dockerd; then
    # A container or a minimal VM: no init system to own the daemon, so start it detached.
    say "start dockerd (no systemd here; its log: /var/log/dockerd.log)"
    setsid dockerd >/var/log/dockerd.log 2>&1 </dev/null &
    tries=0
    while [ "$tries" -lt 100 ] && ! docker_reachable; do
      sleep 0.2
      tries=$((tries + 1))
    done
  fi
  docker_reachable || warn "Docker Engine installed but not answering at $where: see /var/log/dockerd.log or journalctl -u docker"
}

start_service() {
  if ! systemd_running; then
    say "systemd is not running here: $UNIT is written but not started"
    return
  fi
  if [ "$unit_changed" = 1 ] && step "reload systemd (systemctl daemon-reload)"; then systemctl daemon-reload; fi
  if ! systemctl is-enabled --quiet kubelet.service 2>/dev/null && step "enable kubelet.service"; then
    systemctl enable --quiet kubelet.service
  fi
  if ! systemctl is-active --quiet kubelet.service 2>/dev/null; then
    if step "start kubelet.service"; then systemctl start kubelet.service; fi
  elif [ "$binary_changed" = 1 ] || [ "$unit_changed" = 1 ]; then
    if step "restart kubelet.service (new binary or unit)"; then systemctl restart kubelet.service; fi
  fi
}

uninstall() {
  if [ -f "$UNIT" ]; then
    if systemd_running && step "stop and disable kubelet.service"; then
      systemctl disable --now --quiet kubelet.service || true
    fi
    if step "remove $UNIT"; then
      rm -f "$UNIT"
      ! systemd_running || systemctl daemon-reload
    fi
  fi
  if [ -e "$BIN" ] && step "remove $BIN"; then rm -f "$BIN"; fi
  if [ "$changes" = 0 ]; then
    say "no kubelet installed at $BIN: nothing to remove"
  else
    say "kept $CONFIG, $MANIFESTS and the kubelet's root_dir (/var/lib/kubelet unless configured): remove them by hand if unwanted"
  fi
}

if [ "$UNINSTALL" = 1 ]; then
  uninstall
  exit 0
fi

if [ "$NO_SYSTEMD" != 1 ] && [ "$DRY_RUN" != 1 ] && [ "$(id -u)" != 0 ] && [ ! -w "$UNIT_DIR" ]; then
  die "writing $UNIT needs root: rerun with sudo, or add --no-systemd (with --prefix \"\$HOME/.local\" to install as a user)"
fi

binary_changed=0
unit_changed=0
config_written=0
admin_token=''
check_docker
install_binary
write_config
install_docker
if [ "$NO_SYSTEMD" != 1 ]; then
  write_unit
  start_service
fi

# The last line: how to start the kubelet without systemd, and the PATH entry its directory lacks, if it does.
start_hint() {
  command="$BIN run --config_file $CONFIG"
  case ":$PATH:" in
  *":$PREFIX/bin:"*) path_note='' ;;
  *) path_note=" ($PREFIX/bin is not on PATH: export PATH=\"$PREFIX/bin:\$PATH\" to call it kubelet)" ;;
  esac
  if [ "$NO_SYSTEMD" != 1 ] && systemd_running; then
    say "kubelet.service runs it (journalctl -u kubelet -f); to run it without systemd instead: $command$path_note"
  else
    say "start it (no systemd unit runs it): $command$path_note"
  fi
}

if [ "$DRY_RUN" = 1 ]; then
  say "dry run: $changes change(s) would be made; nothing was changed"
  exit 0
elif [ "$changes" = 0 ]; then
  say "nothing to do: kubelet v$(binary_version "$BIN") is installed at $BIN and configured in $CONFIG"
else
  say "done: $("$BIN" --version); pods go in $MANIFESTS, settings in $CONFIG"
fi
if [ "$config_written" = 1 ] && [ -n "$admin_token" ]; then
  say "anonymous access is off: local administration uses the admin token the kubelet writes to $admin_token at its start (0600, root only; the kubelet's own commands read it)"
fi
start_hint
