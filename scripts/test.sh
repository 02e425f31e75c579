#!/usr/bin/env bash
# The whole test suite: every package's vitest run through turbo, two packages at a time, then each package's wall
# time, the ten slowest test files and one closing line with the totals. apps/api is the longest package (about half
# of the suite's test time) and runs beside one stream of the other packages; its files and theirs mostly wait for
# PostgreSQL and for the processes they start, so two streams fill the two cores the serial run left half idle
# (docs/performance.md, "The test suite"). Every package runs even after one fails (--continue), so a red run names
# all that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results.json apps/*/.test-results.json
started=$(date +%s)
pnpm exec turbo run test --concurrency=2 --continue "$@"
rc=$?
node scripts/test-summary.mjs || true
echo "suite wall time: $(( $(date +%s) - started )) s"
exit $rc
