/**
 * The sweeps of a process that runs background work, wired to this server's services: nothing a crash left behind
 * stays. Interrupted workflow runs are resumed (queued ones) or failed, table and file embedding requests whose job never came are queued
 * again (on MAINTENANCE_INTERVAL_MS), temp uploads and orphan blobs are removed (on BLOB_SWEEP_INTERVAL_MS; 0 turns
 * these two off), and STF containers a dead process left running are removed. Started next to the job queue; every
 * process may run them at once.
 */
import { embeddingSweeps } from '@wds/semantic-search';
import { Maintenance, type MaintenanceTask } from '@wds/jobs';
import type { DockerRuntime } from '@wds/stf-runtime';
import { pruneProposals } from '@wds/sql-approval';
import { sweepOrphanBlobs } from '@wds/storage';
import { dispatchWorkflowEvents, fireDueSchedules, pruneHookDeliveries, pruneRowChanges, requeueStaleRuns, resumeInterruptedRuns } from '@wds/workflows';
import type { Config } from './config.js';
import { uploadRequestTimeoutMs } from './http-timeouts.js';
import type { Services } from './services.js';

/** A minute more than the longest an upload may take: nothing of an upload in progress can be older. */
const uploadWindowMs = (config: Config) => uploadRequestTimeoutMs(config) + 60_000;

export function maintenanceTasks(s: Services): MaintenanceTask[] {
  const c = s.config;
  if (c.RUN_STALE_AFTER_MS < 2 * c.RUN_HEARTBEAT_INTERVAL_MS) {
    throw new Error('Invalid configuration: RUN_STALE_AFTER_MS must be at least twice RUN_HEARTBEAT_INTERVAL_MS');
  }
  const tasks: MaintenanceTask[] = [
    {
      // Queued runs cut by a crash go back to the queue to be resumed (RUN_MAX_ATTEMPTS); waiting ones fail.
      name: 'interrupted workflow runs',
      intervalMs: c.MAINTENANCE_INTERVAL_MS,
      run: () => resumeInterruptedRuns(s),
    },
    {
      // A queued run whose job was lost (its process died between recording and queuing it) is queued again.
      name: 'queued workflow runs',
      intervalMs: c.MAINTENANCE_INTERVAL_MS,
      run: () => requeueStaleRuns(s),
    },
    {
      // Each due tick fires once across all processes (its row is locked while it is fired).
      name: 'workflow schedules',
      intervalMs: c.SCHEDULE_TICK_MS,
      run: async () => (await fireDueSchedules(s)).length,
    },
    {
      // Events of workflow triggers (row events from the captured row changes first): settled as their runs end,
      // dispatched as runs when due.
      name: 'workflow events',
      intervalMs: c.SCHEDULE_TICK_MS,
      run: async () => (await dispatchWorkflowEvents(s)).length,
    },
    {
      name: 'hook deliveries',
      intervalMs: c.MAINTENANCE_INTERVAL_MS,
      run: () => pruneHookDeliveries(s.db, c.HOOK_DELIVERY_RETENTION_MS),
    },
    {
      // Captured row changes no row trigger waits for (any more), once realtime has had them.
      name: 'row changes',
      intervalMs: c.MAINTENANCE_INTERVAL_MS,
      run: () => pruneRowChanges(s.db, c.ROW_CHANGE_RETENTION_MS),
    },
    {
      // Decided and expired SQL proposals past their retention (their audit entries stay).
      name: 'SQL proposals',
      intervalMs: c.MAINTENANCE_INTERVAL_MS,
      run: () => pruneProposals(s.db, c.SQL_PROPOSAL_RETENTION_DAYS * 86_400_000),
    },
    ...embeddingSweeps(s, c.MAINTENANCE_INTERVAL_MS),
  ];
  const docker = s.runtimes.docker as DockerRuntime | undefined;
  if (docker) {
    // A run's container outlives it only when its process died mid-run; a minute past its deadline it is removed.
    tasks.push({ name: 'expired STF containers', intervalMs: c.MAINTENANCE_INTERVAL_MS, run: () => docker.removeExpired(60_000) });
  }
  if (c.BLOB_SWEEP_INTERVAL_MS > 0) {
    // A file store's temp file is fresh while its upload streams; an S3 multipart upload is dated by its start.
    const tempAge = c.STORAGE_BACKEND === 's3' ? Math.max(c.TEMP_UPLOAD_MAX_AGE_MS, uploadWindowMs(c)) : c.TEMP_UPLOAD_MAX_AGE_MS;
    // An S3 object written in parts is dated by its start too; its record follows its last part at once.
    const grace = c.STORAGE_BACKEND === 's3' ? Math.max(c.ORPHAN_BLOB_GRACE_MS, uploadWindowMs(c)) : c.ORPHAN_BLOB_GRACE_MS;
    tasks.push(
      { name: 'temporary uploads', intervalMs: c.BLOB_SWEEP_INTERVAL_MS, run: () => s.blobs.cleanTemp(tempAge) },
      {
        name: 'orphan blobs',
        intervalMs: c.BLOB_SWEEP_INTERVAL_MS,
        run: (signal) => sweepOrphanBlobs({ db: s.db, blobs: s.blobs, graceMs: grace, signal }),
      },
    );
  }
  return tasks;
}

/** Starts the sweeps (each runs now, then on its interval); `stop()` them before the database is closed. */
export function startMaintenance(s: Services): Maintenance {
  const maintenance = new Maintenance({
    tasks: maintenanceTasks(s),
    onResult: (task, count) => s.logger.info({ task, count }, 'maintenance sweep'),
    onError: (task, err) => s.logger.warn({ task, err: err.message }, 'maintenance sweep failed'),
  });
  maintenance.start();
  return maintenance;
}
