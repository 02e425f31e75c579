#!/usr/bin/env bash
# The whole test suite: every package's vitest run (through turbo, one package at a time: on this 2-core machine the
# suite is CPU-bound — about 30 CPU-minutes a run — so packages run side by side only contend; docs/performance.md,
# "The test suite"), then each package's wall time, the ten slowest test files and one closing line with the totals.
# Every package runs even after one fails (--continue), so a red run names all that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results.json apps/*/.test-results.json
started=$(date +%s)
pnpm exec turbo run test --concurrency=1 --continue "$@"
rc=$?
node scripts/test-summary.mjs || true
echo "suite wall time: $(( $(date +%s) - started )) s"
exit $rc
