#!/usr/bin/env bash
# The whole test suite: every package built, then every package's vitest run through turbo in two streams, then
# each package's wall time, the ten slowest test files and one closing line with the totals.
#
# The two streams are balanced by hand (docs/performance.md, "The test suite"): apps/api is about half of the suite's
# test time, so it runs alone from the first second in one stream; every other package (apps/worker among them) runs
# one at a time in the other. apps/api's files that mostly wait (its `test:beside`: the console in chromium, its own
# processes killed and restarted, backups) run beside them.
# Left to turbo's own order (`--concurrency=2` over the whole graph), apps/api waited for every
# build and most other packages and then ran alone for four minutes with one core idle. The builds come first so that
# both streams start at once and neither builds (`--only`: a stream runs its tests and no dependency task).
# Every package runs even after one fails (--continue), so a red run names all that failed.
#
# The container engine (podman) is started here, beside the builds, when it is not running, and stopped at the end:
# apps/api's and stf-runtime's docker tests run in different streams, and each package's own setup leaves an engine
# it found running alone, so neither stops it under the other (testkit's startContainerEngine).
set -uo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
rm -f packages/*/.test-results*.json apps/*/.test-results*.json
started=$(date +%s)
# packages/jobs (25 s) follows apps/api: since apps/api's waiting files run beside (test:beside), its stream is the
# shorter one by about that much.
LONG=(--filter=@wds/api --filter=@wds/jobs)
REST=(--filter='!@wds/api' --filter='!@wds/jobs')

engine_started=
if ! bash scripts/container-engine.sh status >/dev/null 2>&1; then
  bash scripts/container-engine.sh start >/dev/null &
  engine=$!
fi
stop_engine() { if [ -n "$engine_started" ]; then bash scripts/container-engine.sh stop >/dev/null 2>&1 || true; fi; }
trap stop_engine EXIT

pnpm exec turbo run build --output-logs=errors-only "$@"
rc=$?
# A failed start is not the suite's failure here: the docker tests report it themselves.
if [ -n "${engine:-}" ]; then wait "$engine" && engine_started=1; fi
if [ $rc -eq 0 ]; then
  pnpm exec turbo run test --only --concurrency=1 --continue "${LONG[@]}" "$@" &
  long=$!
  # apps/api's files that mostly wait — for pages and Lighthouse's quiet periods, for processes and PostgreSQL to
  # start and stop — run beside both streams from the start, on the CPU the streams leave idle.
  pnpm exec turbo run test:beside --only --continue "${LONG[@]}" "$@" &
  browser=$!
  pnpm exec turbo run test --only --concurrency=1 --continue "${REST[@]}" "$@"
  rc=$?
  wait $long || rc=$?
  wait $browser || rc=$?
fi
node scripts/test-summary.mjs || true
echo "suite wall time: $(( $(date +%s) - started )) s"
exit $rc
