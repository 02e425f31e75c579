/**
 * Drive syncs run as background jobs: a request marks the sync queued and queues a job, and whichever process of
 * the service works the queue runs it.
 */
import type { BackgroundJobs } from '@wds/jobs';
import { ServiceError } from '@wds/errors';
import type { DriveSync } from './drive-sync.js';

export const DRIVE_SYNC_QUEUE = 'drive-sync';

/** What drive sync needs of the service that runs it; the service passes its own resources as they are. */
export interface DriveSyncServices {
  /** Undefined when provider credentials cannot be opened (no secrets key). */
  providers: { drive: DriveSync | undefined };
  jobs: Pick<BackgroundJobs, 'enqueue' | 'handle'>;
}

/** The service's drive sync, or 503 when provider credentials cannot be opened (no SECRETS_KEY). */
export function requireDriveSync(s: Pick<DriveSyncServices, 'providers'>): DriveSync {
  if (!s.providers.drive) throw new ServiceError('SERVICE_UNAVAILABLE', 'Provider credentials are not configured', 'set SECRETS_KEY');
  return s.providers.drive;
}

/** Marks a sync requested and queues it; false when one is already queued or running. */
export async function startDriveSync(s: DriveSyncServices, workspaceId: string): Promise<boolean> {
  const drive = requireDriveSync(s);
  // Without a credential the sync could only fail in the background: say so now, naming the provider.
  await drive.checkCredential(workspaceId);
  const { started } = await drive.requestSync(workspaceId);
  if (started) await s.jobs.enqueue(DRIVE_SYNC_QUEUE, { workspaceId }, `drive:${workspaceId}`);
  return started;
}

/** Attaches the drive sync job handler to the service's job queue (before it starts); none without a drive sync. */
export function handleDriveSyncJobs(s: DriveSyncServices): void {
  const drive = s.providers.drive;
  if (!drive) return;
  s.jobs.handle(
    DRIVE_SYNC_QUEUE,
    async ({ data }) => {
      // Provider failures are recorded in the sync's status by runSync itself; only unexpected errors throw.
      await drive.runSync((data as { workspaceId: string }).workspaceId);
    },
    { concurrency: 1, expireInSeconds: 3600, retryLimit: 1 },
  );
}
