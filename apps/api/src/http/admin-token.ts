import { createHash, timingSafeEqual } from 'node:crypto';
import { unauthorized } from '@wds/errors';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Constant-time comparison of the X-Admin-Token header with the configured token. */
export function checkAdminToken(expected: string | undefined, given: string | undefined): void {
  if (!expected) throw unauthorized('The admin interface is disabled (no ADMIN_TOKEN)');
  if (!given || !timingSafeEqual(digest(expected), digest(given))) throw unauthorized('Missing or invalid admin token');
}
