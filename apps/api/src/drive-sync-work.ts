/** Drive syncs run as background jobs: POST …/sync queues one, any process of the service runs it. */
import type { DriveSync } from '@wds/drive-sync';
import { ServiceError } from '@wds/errors';
import { DRIVE_PROVIDER, missingCredential } from '@wds/providers';
import { hasCredential } from '@wds/setup';
import type { Services } from './services.js';

export const DRIVE_SYNC_QUEUE = 'drive-sync';

/** The drive sync of this server, or 503 when provider credentials cannot be opened (no SECRETS_KEY). */
export function driveSync(s: Services): DriveSync {
  if (!s.providers.drive) throw new ServiceError('SERVICE_UNAVAILABLE', 'Provider credentials are not configured', 'set SECRETS_KEY');
  return s.providers.drive;
}

/** Marks a sync requested and queues it; false when one is already queued or running. */
export async function startDriveSync(s: Services, workspaceId: string): Promise<boolean> {
  const drive = driveSync(s);
  // Without a credential the sync could only fail in the background: say so now, naming the provider.
  if (!(await hasCredential(s.db, workspaceId, DRIVE_PROVIDER))) throw missingCredential(workspaceId, DRIVE_PROVIDER);
  const { started } = await drive.requestSync(workspaceId);
  if (started) await s.jobs.enqueue(DRIVE_SYNC_QUEUE, { workspaceId }, `drive:${workspaceId}`);
  return started;
}

export function handleDriveSyncJobs(s: Services): void {
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
