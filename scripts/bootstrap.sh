#!/usr/bin/env bash
# Installs what the project needs on a machine that has only Node >= 20 and npm:
# pnpm at exactly the version pinned in package.json, then the workspace's dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
have=$(pnpm --version 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "bootstrap: installing pnpm $want (found: ${have:-none})"
  npm install --global --no-fund --no-audit "pnpm@$want" >/dev/null
fi
export TURBO_TELEMETRY_DISABLED=1
if [ -f pnpm-lock.yaml ]; then
  pnpm install --frozen-lockfile --reporter=append-only
else
  pnpm install --reporter=append-only
fi
