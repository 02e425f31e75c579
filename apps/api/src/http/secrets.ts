import { ServiceError } from '@wds/errors';
import type { SecretBox } from '@wds/crypto';
import type { Services } from '../services.js';

/** The service's SecretBox, or 503 when no SECRETS_KEY is configured (STF secrets, provider credentials). */
export function secretBox(ctx: { services: Services }): SecretBox {
  const box = ctx.services.secrets;
  if (!box) throw new ServiceError('SERVICE_UNAVAILABLE', 'Secrets are not configured', 'set SECRETS_KEY');
  return box;
}
