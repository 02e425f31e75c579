#!/usr/bin/env bash
# The whole test suite: every package built, then every package's vitest run through turbo in two streams, then
# each package's wall time, the ten slowest test files and one closing line with the totals.
#
# The two streams are balanced by hand (docs/performance.md, "The test suite"): apps/api is about half of the suite's
# test time, so it runs from the first second in one stream, followed by apps/worker; every other package runs one at
# a time in the other. Left to turbo's own order (`--concurrency=2` over the whole graph), apps/api waited for every
# build and most other packages and then ran alone for four minutes with one core idle. The builds come first so that
# both streams start at once and neither builds (`--only`: a stream runs its tests and no dependency task).
# Every package runs even after one fails (--continue), so a red run names all that failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results.json apps/*/.test-results.json
started=$(date +%s)
LONG=(--filter=@wds/api --filter=@wds/worker)
REST=(--filter='!@wds/api' --filter='!@wds/worker')

pnpm exec turbo run build --output-logs=errors-only "$@"
rc=$?
if [ $rc -eq 0 ]; then
  pnpm exec turbo run test --only --concurrency=1 --continue "${LONG[@]}" "$@" &
  long=$!
  pnpm exec turbo run test --only --concurrency=1 --continue "${REST[@]}" "$@"
  rc=$?
  wait $long || rc=$?
fi
node scripts/test-summary.mjs || true
echo "suite wall time: $(( $(date +%s) - started )) s"
exit $rc
