#!/usr/bin/env bash
# The whole test suite: every package's vitest run, then the wall time of each package, the ten slowest test files
# and one closing line with the totals.
#
# With no arguments the packages run in parallel streams (this is what CI runs): the build first, then apps/api
# (the longest package, mostly waiting on PostgreSQL and child processes) beside two streams of the other packages,
# one package at a time in each. The container engine the docker-runtime tests share is started once here, so no
# stream stops it under another. With arguments (`pnpm test --filter @wds/db`) turbo runs what they select, one
# package at a time, as before.
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results.json apps/*/.test-results.json

if [ $# -gt 0 ]; then
  pnpm exec turbo run test --concurrency=1 "$@"
  rc=$?
  node scripts/test-summary.mjs || true
  exit $rc
fi

started=$(date +%s)
pnpm exec turbo run build --output-logs=errors-only || exit 1

engine_started=0
if ! bash scripts/container-engine.sh status >/dev/null 2>&1; then
  bash scripts/container-engine.sh start >/dev/null || exit 1
  engine_started=1
fi
stop_engine() { [ "$engine_started" = 1 ] && bash scripts/container-engine.sh stop >/dev/null 2>&1; return 0; }
trap stop_engine EXIT

# Each stream is one turbo run of test tasks only (--only: the build above is done), one package at a time.
HEAVY=(--filter=@wds/stf-runtime --filter=@wds/sql-rewriter --filter=@wds/db --filter=@wds/workspace-sql)
REST=(--filter='!@wds/api' --filter='!@wds/stf-runtime' --filter='!@wds/sql-rewriter' --filter='!@wds/db' --filter='!@wds/workspace-sql')
stream() { pnpm exec turbo run test --only --continue --concurrency=1 "$@"; }
stream --filter=@wds/api & api=$!
stream "${HEAVY[@]}" & heavy=$!
stream "${REST[@]}" & rest=$!
rc=0
for pid in $api $heavy $rest; do wait "$pid" || rc=1; done

node scripts/test-summary.mjs || true
echo "suite wall time: $(( $(date +%s) - started )) s"
exit $rc
