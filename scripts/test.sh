#!/usr/bin/env bash
# The whole test suite: every package's vitest run (through turbo, one package at a time on this 2-core
# machine), then one closing line with the totals.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results.json apps/*/.test-results.json
pnpm exec turbo run test --concurrency=1 "$@"
rc=$?
node scripts/test-summary.mjs || true
exit $rc
