/**
 * The worker process: background jobs (embeddings, drive syncs) and maintenance sweeps (interrupted runs, temp
 * uploads, orphan blobs) on the shared PostgreSQL queue, with no HTTP listener. Configured by the same settings as
 * the API; run M of these next to API processes started with RUN_JOBS=false (docs/deployment.md). The start-up
 * itself lives with the API's (`@wds/api` worker.ts), which it shares everything but the listener with.
 */
import '@wds/api/worker-main';
