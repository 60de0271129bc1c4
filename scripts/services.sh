#!/usr/bin/env bash
# Real services for the tests: a private dockerd (no bridge), etcd and a registry on loopback,
# plus the local test images. Usage: services.sh install|up|down|status.
# `up` writes $DIR/env (shell KEY=VALUE lines) that scripts/test.sh and the tests read.
set -euo pipefail

DIR=${KUBELET_TEST_DIR:-/tmp/kubelet-test-services}
ETCD_PORT=${KUBELET_TEST_ETCD_PORT:-12379}
REGISTRY_PORT=${KUBELET_TEST_REGISTRY_PORT:-15000}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PACKAGES=(docker.io etcd-server etcd-client docker-registry busybox-static gcc libc6-dev curl openssl wrk shellcheck)

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
}

write_env() {
  cat >"$DIR/env" <<ENV
KUBELET_TEST_DIR=$DIR
KUBELET_TEST_DOCKER_HOST=unix://$DIR/docker.sock
KUBELET_TEST_ETCD=http://127.0.0.1:$ETCD_PORT
KUBELET_TEST_REGISTRY=127.0.0.1:$REGISTRY_PORT
KUBELET_TEST_BUSYBOX=local/busybox:stable
KUBELET_TEST_PAUSE=local/pause:latest
ENV
}

up() {
  install_packages
  mkdir -p "$DIR"
  start_registry
  start_dockerd
  start_etcd
  build_images
  write_env
  log "up: docker unix://$DIR/docker.sock, etcd :$ETCD_PORT, registry :$REGISTRY_PORT (env in $DIR/env)"
}

down() {
  # Containers first, so no container process outlives its daemon.
  if running dockerd; then
    local ids; ids=$(docker -H "unix://$DIR/docker.sock" ps -aq 2>/dev/null || true)
    [ -n "$ids" ] && docker -H "unix://$DIR/docker.sock" rm -f $ids >/dev/null 2>&1 || true
  fi
  for s in etcd registry dockerd; do
    if running "$s"; then
      kill "$(cat "$DIR/$s.pid")" 2>/dev/null || true
      for _ in $(seq 100); do running "$s" || break; sleep 0.1; done
    fi
    rm -f "$DIR/$s.pid"
  done
  rm -f "$DIR/env"
}

status() {
  for s in dockerd etcd registry; do
    if running "$s"; then echo "$s: running (pid $(cat "$DIR/$s.pid"))"; else echo "$s: stopped"; fi
  done
}

case "${1:-}" in
  install) install_packages ;;
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 install|up|down|status" >&2; exit 2 ;;
esac
