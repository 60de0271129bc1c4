#!/usr/bin/env bash
# Real services for the tests: a private dockerd (no bridge), a private containerd (CRI plugin,
# loopback-only CNI stub), etcd and a registry on loopback, plus the local test images. Usage: services.sh install|up|down|status,
# and `resume containerd|containerd17` after a test stopped that daemon under running containers.
# A second private containerd, 1.7 from Debian 13's packages (unpacked, never installed), runs beside Debian 12's 1.6.
# `up` writes $DIR/env (shell KEY=VALUE lines) that scripts/test.sh and the tests read.
set -euo pipefail

DIR=${KUBELET_TEST_DIR:-/tmp/kubelet-test-services}
ETCD_PORT=${KUBELET_TEST_ETCD_PORT:-12379}
REGISTRY_PORT=${KUBELET_TEST_REGISTRY_PORT:-15000}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# musl, musl-tools, musl-dev, qemu-user and libc6-arm64-cross: the installer's C library tests (a glibc system with
# Debian's musl loader; a musl root with a libstdc++ linked against musl) and the arm64 build run under qemu-user.
# Debian 13 (trixie) packages unpacked here, shared by every $DIR: containerd 1.7 (GetContainerEvents), and kubectl when
# the machine has none. A private apt state: trixie is never added to the system's sources (see test-env-debian13.md).
TRIXIE=${KUBELET_TEST_TRIXIE_DIR:-/tmp/kubelet-test-trixie}
PACKAGES=(docker.io containerd containernetworking-plugins etcd-server etcd-client docker-registry busybox-static gcc libc6-dev curl openssl wrk shellcheck prometheus python3-kubernetes dbus python3-dbus python3-gi systemd musl musl-tools musl-dev qemu-user libc6-arm64-cross)

log() { printf 'services: %s\n' "$*" >&2; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# Starts again a containerd that was stopped (SIGTERM) under running containers, their shims and mounts kept.
resume() { # containerd | containerd17
  case "$1" in
    containerd) KEEP_SHIMS=1 start_containerd ;;
    containerd17) KEEP_SHIMS=1 start_containerd17 ;;
    *) log "resume: no daemon \"$1\" (containerd or containerd17)"; return 2 ;;
  esac
}

# Downloads and unpacks trixie's version of a package into $TRIXIE/root unless its binary is there; the version is
# named (trixie's, found with madison), or apt would pick the machine's own or another suite's.
install_trixie() { # package, version prefix (1.7.), binary under $TRIXIE/root
  local pkg=$1 prefix=$2 binary=$3
  [ -x "$TRIXIE/root/$binary" ] && return 0
  mkdir -p "$TRIXIE/lists/partial" "$TRIXIE/cache/archives/partial" "$TRIXIE/root"
  echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' >"$TRIXIE/sources.list"
  local opts=(-o APT::Sandbox::User=root -o "Dir::Etc::sourcelist=$TRIXIE/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$TRIXIE/lists" -o "Dir::Cache=$TRIXIE/cache")
  ls "$TRIXIE/lists/"*_Packages >/dev/null 2>&1 || apt-get -q "${opts[@]}" update >/dev/null
  local version
  version=$(apt-cache "${opts[@]}" madison "$pkg" | awk -F' *[|] *' -v p="$prefix" '/trixie/ && index($2, p) == 1 { print $2; exit }')
  if [ -z "$version" ]; then log "Debian 13 has no $pkg $prefix*"; return 1; fi
  log "unpacking $pkg $version from Debian 13 into $TRIXIE/root"
  (cd "$TRIXIE" && apt-get -q "${opts[@]}" download "$pkg=$version" >/dev/null)
  dpkg-deb -x "$TRIXIE/${pkg}_${version//:/%3a}_"*.deb "$TRIXIE/root"
}

install_trixie_packages() {
  install_trixie containerd 1.7. usr/bin/containerd
  # The machine's own kubectl when it has one; Debian 12 has none.
  command -v kubectl >/dev/null || install_trixie kubectl 1.32. usr/bin/kubectl
}

wait_for() { # description, tries (x0.1s), command...
  local what=$1 tries=$2; shift 2
  for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  log "$what did not come up; last lines of its log:"; tail -n 20 "$DIR/$what.log" >&2 || true
  return 1
}

# Alive and not a zombie (a killed daemon whose parent is gone can linger unreaped).
running() {
  local pid
  pid=$(cat "$DIR/$1.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$pid/stat" 2>/dev/null
}

start_dockerd() {
  running dockerd && return 0
  # A daemon killed with its session leaves containerd and its shims, mounts (network namespaces,
  # container root filesystems), a pid file and a socket behind: clear them before starting again.
  pkill -9 -f "$DIR/docker/exec" 2>/dev/null || true
  awk -v dir="$DIR/docker/" 'index($2, dir) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done
  rm -rf "$DIR/docker.sock" "$DIR/docker/docker.pid" "$DIR/docker/exec"
  mkdir -p "$DIR/docker"
  # Our own daemon, not the host's: private sockets and data, no bridge (loopback-only rule).
  setsid dockerd --data-root "$DIR/docker/data" --exec-root "$DIR/docker/exec" \
    -H "unix://$DIR/docker.sock" --pidfile "$DIR/docker/docker.pid" \
    --bridge=none --iptables=false --ip-masq=false --ip6tables=false \
    --registry-mirror "http://127.0.0.1:$REGISTRY_PORT" \
    >"$DIR/dockerd.log" 2>&1 &
  echo $! >"$DIR/dockerd.pid"
  wait_for dockerd 300 curl -sf --unix-socket "$DIR/docker.sock" http://d/_ping
}

start_etcd() {
  running etcd && return 0
  setsid etcd --name test --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "test=http://127.0.0.1:$((ETCD_PORT + 1))" >"$DIR/etcd.log" 2>&1 &
  echo $! >"$DIR/etcd.pid"
  wait_for etcd 200 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
}

start_registry() {
  running registry && return 0
  mkdir -p "$DIR/registry"
  cat >"$DIR/registry.yml" <<YML
version: 0.1
log: { level: warn }
storage: { filesystem: { rootdirectory: $DIR/registry }, delete: { enabled: true } }
http: { addr: 127.0.0.1:$REGISTRY_PORT }
YML
  setsid docker-registry serve "$DIR/registry.yml" >"$DIR/registry.log" 2>&1 &
  echo $! >"$DIR/registry.pid"
  wait_for registry 200 curl -sf "http://127.0.0.1:$REGISTRY_PORT/v2/"
}

# containerd's CRI refuses a sandbox whose CNI result names no interface, and the network rule
# forbids a bridge: this stub configures nothing and reports an eth0 holding 127.0.0.1/8.
write_cni() { # the containerd's folder
  local c=$1
  mkdir -p "$c/cni-bin" "$c/cni"
  cp /usr/lib/cni/loopback "$c/cni-bin/loopback"
  cat >"$c/cni-bin/noop-eth0" <<'SH'
#!/bin/sh
case "$CNI_COMMAND" in
  ADD)
    cat >/dev/null
    printf '{"cniVersion":"0.4.0","interfaces":[{"name":"eth0","sandbox":"%s"}],"ips":[{"version":"4","interface":0,"address":"127.0.0.1/8"}]}\n' "$CNI_NETNS" ;;
  VERSION) printf '{"cniVersion":"0.4.0","supportedVersions":["0.3.0","0.3.1","0.4.0"]}\n' ;;
  *) cat >/dev/null ;;
esac
SH
  chmod +x "$c/cni-bin/noop-eth0"
  echo '{"cniVersion":"0.4.0","name":"lo-only","plugins":[{"type":"noop-eth0"}]}' >"$c/cni/10-lo-only.conflist"
}

# A private containerd: name (its pid and log file, and its folder under $DIR), the binary; its shims are found on
# PATH, beside the binary first.
start_containerd_as() {
  local name=$1 binary=$2
  running "$name" && return 0
  local c=$DIR/$name
  # A containerd killed with its session leaves shims and mounts behind (see start_dockerd); `resume` keeps them, for
  # a daemon restarted under running containers, as an upgrade restarts it.
  if [ "${KEEP_SHIMS:-}" != 1 ]; then
    pkill -9 -f -- "-address $c/containerd.sock" 2>/dev/null || true
    awk -v dir="$c/" 'index($2, dir) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r mnt; do
      umount -l "$mnt" 2>/dev/null || true
    done
  fi
  rm -f "$c/containerd.sock" "$c/containerd.sock.ttrpc"
  mkdir -p "$c"
  write_cni "$c"
  # Our own daemon beside any system one: private root, state, socket and runc root.
  # restrict_oom_score_adj: these machines refuse a negative oom_score_adj (no CAP_SYS_RESOURCE).
  cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/local/cri-pause:latest"
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$c/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$c/cni-bin"
    conf_dir = "$c/cni"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$c/certs.d"
TOML
  # Plain HTTP to the loopback registry, as dockerd's mirror does for Docker Hub names; and
  # registry.k8s.io served by that registry too, which lacks pause:3.9: no route to the real one.
  local reg="127.0.0.1:$REGISTRY_PORT"
  mkdir -p "$c/certs.d/$reg" "$c/certs.d/docker.io" "$c/certs.d/registry.k8s.io"
  printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$reg" "$reg" >"$c/certs.d/$reg/hosts.toml"
  printf 'server = "https://registry-1.docker.io"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$reg" >"$c/certs.d/docker.io/hosts.toml"
  printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$reg" "$reg" >"$c/certs.d/registry.k8s.io/hosts.toml"
  PATH="$(dirname "$binary"):$PATH" setsid "$binary" --config "$c/config.toml" >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
  wait_for "$name" 300 ctr -a "$c/containerd.sock" version
}

start_containerd() { start_containerd_as containerd "$(command -v containerd)"; }
# containerd 1.7 (Debian 13's), beside 1.6: its CRI serves GetContainerEvents, the Evented PLEG's stream.
start_containerd17() { start_containerd_as containerd17 "$TRIXIE/root/usr/bin/containerd"; }

# The same local images in containerd's k8s.io namespace (the CRI's), under the names dockerd knows,
# except the pause images: containerd has its own sandbox image (local/cri-pause), and neither the
# kubelet's --network_container_image default nor local/pause is there, so a kubelet that pulled
# its flag's image before RunPodSandbox would fail the tests.
import_images() { # the containerd's name
  local ctr=(ctr -a "$DIR/$1/containerd.sock" -n k8s.io)
  "${ctr[@]}" images check "name==docker.io/local/cri-pause:latest" 2>/dev/null | grep -q cri-pause && return 0
  local tar="$DIR/images-$1.tar"
  docker -H "unix://$DIR/docker.sock" save -o "$tar" local/busybox:latest local/busybox:stable local/cri-pause:latest \
    registry.k8s.io/busybox:1.27.2
  "${ctr[@]}" images import "$tar" >/dev/null
  rm -f "$tar"
}

build_images() {
  local docker=(docker -H "unix://$DIR/docker.sock")
  local reg="127.0.0.1:$REGISTRY_PORT"
  if ! "${docker[@]}" image inspect local/busybox:latest >/dev/null 2>&1; then
    local root; root=$(mktemp -d)
    mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/var/www"
    cp "$(command -v busybox)" "$root/bin/busybox"
    for a in sh sleep echo cat ls httpd nc wget true false env ps id kill mkdir touch rm test grep head tail seq date printf hostname stat df mount; do
      ln -s busybox "$root/bin/$a"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
    echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >>"$root/etc/passwd"
    echo 'root:x:0:' >"$root/etc/group"
    tar -C "$root" -c . | "${docker[@]}" import -c 'ENV PATH=/bin' -c 'CMD ["sh"]' - local/busybox:latest >/dev/null
    rm -rf "$root"
  fi
  if ! "${docker[@]}" image inspect local/pause:latest >/dev/null 2>&1; then
    local root; root=$(mktemp -d)
    gcc -static -Os -o "$root/pause" "$HERE/pause.c"
    tar -C "$root" -c pause | "${docker[@]}" import -c 'ENTRYPOINT ["/pause"]' - local/pause:latest >/dev/null
    rm -rf "$root"
  fi
  # Stand-ins for Docker Hub names, served through the registry mirror, and a pinned tag
  # of another registry, so unmodified real-world manifests resolve offline.
  for ref in "$reg/library/busybox:latest" "$reg/library/busybox:1.35" "$reg/test/busybox:1.35"; do
    "${docker[@]}" tag local/busybox:latest "$ref"
    "${docker[@]}" push "$ref" >/dev/null
  done
  "${docker[@]}" tag local/busybox:latest registry.k8s.io/busybox:1.27.2
  # A pinned tag: by Kubernetes rules `:latest` means pull policy Always, which needs a registry.
  "${docker[@]}" tag local/busybox:latest local/busybox:stable
  "${docker[@]}" tag local/pause:latest registry.k8s.io/pause:3.9
  "${docker[@]}" tag local/pause:latest local/cri-pause:latest
}

write_env() {
  cat >"$DIR/env" <<ENV
KUBELET_TEST_DIR=$DIR
KUBELET_TEST_DOCKER_HOST=unix://$DIR/docker.sock
KUBELET_TEST_ETCD=http://127.0.0.1:$ETCD_PORT
KUBELET_TEST_REGISTRY=127.0.0.1:$REGISTRY_PORT
KUBELET_TEST_BUSYBOX=local/busybox:stable
KUBELET_TEST_PAUSE=local/pause:latest
KUBELET_TEST_CONTAINERD=unix://$DIR/containerd/containerd.sock
KUBELET_TEST_CONTAINERD_17=unix://$DIR/containerd17/containerd.sock
KUBELET_TEST_CONTAINERD_17_BINARY=$TRIXIE/root/usr/bin/containerd
KUBELET_TEST_KUBECTL=$(command -v kubectl || echo "$TRIXIE/root/usr/bin/kubectl")
ENV
}

up() {
  install_packages
  install_trixie_packages
  mkdir -p "$DIR"
  start_registry
  start_dockerd
  start_etcd
  start_containerd
  start_containerd17
  build_images
  import_images containerd
  import_images containerd17
  write_env
  log "up: docker unix://$DIR/docker.sock, containerd unix://$DIR/containerd/containerd.sock (1.6), unix://$DIR/containerd17/containerd.sock (1.7), etcd :$ETCD_PORT, registry :$REGISTRY_PORT (env in $DIR/env)"
}

down() {
  # Containers first, so no container process outlives its daemon.
  if running dockerd; then
    local ids; ids=$(docker -H "unix://$DIR/docker.sock" ps -aq 2>/dev/null || true)
    [ -n "$ids" ] && docker -H "unix://$DIR/docker.sock" rm -f $ids >/dev/null 2>&1 || true
  fi
  for c in containerd containerd17; do
    running "$c" || continue
    local ctr=(ctr -a "$DIR/$c/containerd.sock" -n k8s.io)
    local tasks; tasks=$("${ctr[@]}" tasks ls -q 2>/dev/null || true)
    for t in $tasks; do "${ctr[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1 || true; done
    for t in $tasks; do "${ctr[@]}" tasks rm -f "$t" >/dev/null 2>&1 || true; done
  done
  for s in etcd registry containerd containerd17 dockerd; do
    if running "$s"; then
      kill "$(cat "$DIR/$s.pid")" 2>/dev/null || true
      for _ in $(seq 100); do running "$s" || break; sleep 0.1; done
    fi
    rm -f "$DIR/$s.pid"
  done
  rm -f "$DIR/env"
}

status() {
  for s in dockerd containerd containerd17 etcd registry; do
    if running "$s"; then echo "$s: running (pid $(cat "$DIR/$s.pid"))"; else echo "$s: stopped"; fi
  done
}

case "${1:-}" in
  install) install_packages && install_trixie_packages ;;
  up) up ;;
  down) down ;;
  status) status ;;
  resume) resume "${2:-}" ;;
  *) echo "usage: $0 install|up|down|status|resume containerd|containerd17" >&2; exit 2 ;;
esac
