/** Provider calls (drive sync, SaaS proxy): the registry from PROVIDERS, and the client and drive sync built on it. */
import type { SecretBox } from '@wds/crypto';
import type { Db } from '@wds/db';
import { DriveSync } from '@wds/drive-sync';
import type { OutboundGuard } from '@wds/effect-runner';
import { ProviderClient, parseProviders } from '@wds/providers';
import { hasCredential } from '@wds/setup';
import type { BlobStore } from '@wds/storage';
import type { Config } from './config.js';

export interface ProviderServices {
  /** Undefined without SECRETS_KEY: credentials cannot be opened, so provider routes answer 503. */
  client: ProviderClient | undefined;
  drive: DriveSync | undefined;
}

export function createProviders(config: Config, deps: { db: Db; secrets: SecretBox | undefined; blobs: BlobStore; outbound: OutboundGuard }): ProviderServices {
  const allowHttpLoopback = config.PROVIDERS_ALLOW_HTTP_LOOPBACK;
  const registry = parseProviders(config.PROVIDERS, { allowHttpLoopback });
  if (!deps.secrets) return { client: undefined, drive: undefined };
  const client = new ProviderClient({ db: deps.db, sealer: deps.secrets, registry, guard: deps.outbound, allowHttpLoopback });
  return { client, drive: new DriveSync({ db: deps.db, providers: client, blobs: deps.blobs, hasCredential }) };
}
