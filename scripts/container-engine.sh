#!/usr/bin/env bash
# A Docker-compatible container engine for the docker STF runtime: podman's API service, rootful, with its
# storage, configuration and socket inside the project (nothing system-wide is configured).
#
#   scripts/container-engine.sh start    installs podman if missing (Debian, as root), imports the local images,
#                                        starts the service if it is not running; prints DOCKER_HOST=unix://…
#   scripts/container-engine.sh stop     stops the service started by `start`
#   scripts/container-engine.sh status   prints DOCKER_HOST=… and exits 0 when the service answers
#
# Images (no registry is reachable here, so they are built from files already on this machine):
#   (the suffix is the recipe's revision: bump it when the recipe changes, so an old image is not reused)
#   localhost/wds-busybox:2    /bin/busybox (busybox-static) and its applet links
#   localhost/wds-node:<ver>-2 this machine's node binary and the shared libraries it links
#
# Why the private containers.conf: the sandbox's hard RLIMIT_NOFILE is 20000, so podman's default ulimits fail
# (`setrlimit RLIMIT_NOFILE: Operation not permitted`), and crun refuses the hybrid cgroup layout; runc works.
# Override the directory with WDS_ENGINE_DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${WDS_ENGINE_DIR:-$ROOT/.cache/container-engine}
SOCK="$DIR/podman.sock"
PIDFILE="$DIR/service.pid"
export CONTAINERS_CONF="$DIR/containers.conf"

log() { echo "container-engine: $*" >&2; }

podman_() { podman --root "$DIR/storage" --runroot "$DIR/runroot" "$@"; }

install_podman() {
  command -v podman >/dev/null && command -v runc >/dev/null && [ -x /bin/busybox ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "podman, runc and busybox-static are needed; install them (Debian: apt-get install podman runc busybox-static)"
    exit 1
  fi
  local pkgs=(podman runc conmon catatonit uidmap busybox-static)
  log "installing ${pkgs[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends "${pkgs[@]}" >"$DIR/apt.log" 2>&1; then
    apt-get update -q >>"$DIR/apt.log" 2>&1
    apt-get install -y -q --no-install-recommends "${pkgs[@]}" >>"$DIR/apt.log" 2>&1 || {
      log "apt-get failed; see $DIR/apt.log"
      exit 1
    }
  fi
}

write_config() {
  cat >"$CONTAINERS_CONF" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]
[engine]
runtime = "runc"
EOF
}

import_image() { # name, rootfs dir
  local tag=$1 rootfs=$2
  tar -C "$rootfs" -cf - . | podman_ import -q - "$tag" >/dev/null
  rm -rf "$rootfs"
  log "imported $tag"
}

build_images() {
  if ! podman_ image exists localhost/wds-busybox:2; then
    local bb="$DIR/rootfs-busybox"
    rm -rf "$bb" && mkdir -p "$bb/bin" "$bb/tmp" "$bb/etc" && chmod 1777 "$bb/tmp"
    cp /bin/busybox "$bb/bin/busybox"
    for applet in $(/bin/busybox --list); do
      [ "$applet" = busybox ] || ln -sf busybox "$bb/bin/$applet"
    done
    echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >"$bb/etc/passwd"
    import_image localhost/wds-busybox:2 "$bb"
  fi
  local node_bin node_ver
  node_bin=$(readlink -f "$(command -v node)")
  node_ver=$("$node_bin" -p 'process.versions.node')
  if ! podman_ image exists "localhost/wds-node:$node_ver-2"; then
    local nr="$DIR/rootfs-node"
    rm -rf "$nr" && mkdir -p "$nr/usr/bin" "$nr/tmp" "$nr/etc" && chmod 1777 "$nr/tmp"
    cp "$node_bin" "$nr/usr/bin/node"
    for lib in $(ldd "$node_bin" | grep -o '/[^ ]*\.so[^ ]*'); do
      mkdir -p "$nr$(dirname "$lib")"
      cp -L "$lib" "$nr$lib"
    done
    echo 'nobody:x:65534:65534:nobody:/:/usr/sbin/nologin' >"$nr/etc/passwd"
    import_image "localhost/wds-node:$node_ver-2" "$nr"
  fi
}

answers() { # the service answers /_ping
  [ -S "$SOCK" ] && node -e '
    const r = require("node:http").get({ socketPath: process.argv[1], path: "/_ping", timeout: 2000 }, (m) => process.exit(m.statusCode === 200 ? 0 : 1));
    r.on("error", () => process.exit(1)); r.on("timeout", () => process.exit(1));' "$SOCK"
}

start() {
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  install_podman
  write_config
  build_images
  if ! answers; then
    rm -f "$SOCK"
    # From inside $DIR: conmon writes files (an `oom` marker) into its working directory.
    (cd "$DIR" && exec setsid podman --root "$DIR/storage" --runroot "$DIR/runroot" system service --time=0 "unix://$SOCK" \
      >"$DIR/service.log" 2>&1 </dev/null) &
    echo $! >"$PIDFILE"
    for _ in $(seq 1 100); do answers && break; sleep 0.1; done
    answers || { log "the service did not start; see $DIR/service.log"; exit 1; }
    log "service started (pid $(cat "$PIDFILE"))"
  fi
  echo "DOCKER_HOST=unix://$SOCK"
}

stop() {
  if [ -f "$PIDFILE" ]; then
    local pid
    pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$PIDFILE" "$SOCK"
  fi
  # podman's overlay driver bind-mounts its own directory; without this the checkout cannot be removed.
  if mountpoint -q "$DIR/storage/overlay" 2>/dev/null; then umount "$DIR/storage/overlay" 2>/dev/null || true; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) answers && echo "DOCKER_HOST=unix://$SOCK" ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
