#!/usr/bin/env bash
# A headless browser for the browser tests (CORS from a page on another origin): Debian's `chromium`, driven by
# playwright-core through `chromium.launch({ executablePath })` (no browser download from a CDN).
#
#   scripts/browser.sh     installs chromium if missing (Debian, as root, apt-get --no-install-recommends);
#                          prints CHROMIUM=<path of the executable>
#
# WDS_CHROMIUM=<path> uses that executable instead (nothing is installed). The apt log is .cache/browser/apt.log.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${WDS_BROWSER_DIR:-$ROOT/.cache/browser}

log() { echo "browser: $*" >&2; }

find_chromium() {
  if [ -n "${WDS_CHROMIUM:-}" ]; then
    [ -x "$WDS_CHROMIUM" ] && { echo "$WDS_CHROMIUM"; return 0; }
    log "WDS_CHROMIUM=$WDS_CHROMIUM is not an executable"
    exit 1
  fi
  local c
  for c in chromium chromium-browser; do
    command -v "$c" >/dev/null && { command -v "$c"; return 0; }
  done
  return 1
}

install_chromium() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "chromium is needed; install it (Debian: apt-get install chromium) or set WDS_CHROMIUM"
    exit 1
  fi
  mkdir -p "$DIR"
  log "installing chromium (apt-get; log in $DIR/apt.log)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends chromium >"$DIR/apt.log" 2>&1; then
    apt-get update -q >>"$DIR/apt.log" 2>&1
    apt-get install -y -q --no-install-recommends chromium >>"$DIR/apt.log" 2>&1 || {
      log "apt-get failed; see $DIR/apt.log"
      exit 1
    }
  fi
}

path=$(find_chromium) || { install_chromium; path=$(find_chromium) || { log "chromium installed but not found on PATH"; exit 1; }; }
echo "CHROMIUM=$path"
