/**
 * Access tokens of a workspace's provider credential. The sealed credential is opened only here; an expired token
 * (or one the provider just refused) is refreshed with the OAuth refresh_token grant and written back sealed. The
 * refresh runs under a row lock on the credential, so concurrent requests refresh once and the others use its
 * result. No token, refresh token or client secret ever appears in an error.
 */
import { type Db, isUuid } from '@wds/db';
import type { OutboundGuard } from '@wds/effect-runner';
import { ServiceError, validationError } from '@wds/errors';
import { credentialBinding, type Sealer } from '@wds/setup';
import { missingCredential, parseCredential, reconnectHint, redact, type StoredCredential, serializeCredential } from './credential.js';
import type { ProviderConfig, ProviderRegistry } from './registry.js';
import { openExchange, readCapped } from './transport.js';

export const USER_AGENT = 'wds-providers';
const TOKEN_RESPONSE_MAX_BYTES = 64 * 1024;
const TOKEN = /^[\x21-\x7e]{1,8192}$/;

export interface ProviderAuthOptions {
  db: Db;
  sealer: Sealer;
  registry: ProviderRegistry;
  guard: OutboundGuard;
  /** A token this close to its expiry counts as expired (default 60 s). */
  skewMs?: number;
  /** Deadline of a token endpoint call (default 15 s; the credential row stays locked meanwhile). */
  timeoutMs?: number;
  now?: () => number;
}

export interface AccessTokenOptions {
  /** Refresh even when the stored token has not expired. */
  forceRefresh?: boolean;
  /** The token the provider just refused: refresh, unless the stored token already differs (another request refreshed it). */
  rejected?: string;
}

export class ProviderAuth {
  private readonly db: Db;
  private readonly sealer: Sealer;
  private readonly registry: ProviderRegistry;
  private readonly guard: OutboundGuard;
  private readonly skewMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(opts: ProviderAuthOptions) {
    this.db = opts.db;
    this.sealer = opts.sealer;
    this.registry = opts.registry;
    this.guard = opts.guard;
    this.skewMs = opts.skewMs ?? 60_000;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
    this.now = opts.now ?? Date.now;
  }

  /** The provider's configuration; VALIDATION_ERROR for a provider that is not configured. */
  provider(name: string): ProviderConfig {
    const config = this.registry.get(name);
    if (!config) throw validationError(`provider: unknown provider ${JSON.stringify(name)} (configured: ${[...this.registry.keys()].join(', ')})`, 'Unknown provider');
    return config;
  }

  /** A current access token of the workspace's credential for `provider`, refreshed first when needed. */
  async accessToken(workspaceId: string, provider: string, opts: AccessTokenOptions = {}): Promise<string> {
    const config = this.provider(provider);
    const forced = opts.forceRefresh === true || opts.rejected !== undefined;
    if (!forced) {
      const cred = await this.load(this.db, workspaceId, provider, false);
      if (cred.accessToken !== undefined && (!this.expired(cred) || this.whyNoRefresh(config, cred) !== undefined)) return cred.accessToken;
    }
    return this.db.transaction().execute(async (trx) => {
      const cred = await this.load(trx, workspaceId, provider, true);
      const current = cred.accessToken !== undefined && !this.expired(cred);
      if (current && !opts.forceRefresh && cred.accessToken !== opts.rejected) return cred.accessToken!;
      const why = this.whyNoRefresh(config, cred);
      if (why !== undefined) {
        if (!forced && cred.accessToken !== undefined) return cred.accessToken;
        throw forced
          ? new ServiceError('UPSTREAM_ERROR', `${provider} refused the workspace credential, and it cannot be refreshed (${why})`, reconnectHint(workspaceId, provider))
          : new ServiceError('CONFLICT', `The stored credential for provider ${provider} has no access_token and cannot be refreshed (${why})`, reconnectHint(workspaceId, provider));
      }
      const fresh = await this.refresh(config, cred, workspaceId);
      await trx
        .updateTable('platform.workspace_credentials')
        .set({ sealed_value: this.sealer.seal(serializeCredential(fresh), credentialBinding(workspaceId, provider)), updated_at: new Date() })
        .where('workspace_id', '=', workspaceId)
        .where('provider', '=', provider)
        .execute();
      return fresh.accessToken!;
    });
  }

  private expired(cred: StoredCredential): boolean {
    return cred.expiresAt !== undefined && cred.expiresAt - this.skewMs <= this.now();
  }

  private whyNoRefresh(config: ProviderConfig, cred: StoredCredential): string | undefined {
    if (cred.refreshToken === undefined) return 'the credential has no refresh_token';
    if (config.tokenUrl === undefined) return 'the provider has no token_url';
    if ((cred.clientId ?? config.clientId) === undefined) return 'no client_id in the credential or the provider configuration';
    return undefined;
  }

  private async load(db: Db, workspaceId: string, provider: string, lock: boolean): Promise<StoredCredential> {
    let query = db
      .selectFrom('platform.workspace_credentials')
      .select('sealed_value')
      .where('workspace_id', '=', workspaceId)
      .where('provider', '=', provider);
    if (lock) query = query.forUpdate();
    const row = isUuid(workspaceId) ? await query.executeTakeFirst() : undefined;
    if (!row) throw missingCredential(workspaceId, provider);
    let plaintext: string;
    try {
      plaintext = this.sealer.open(row.sealed_value, credentialBinding(workspaceId, provider));
    } catch {
      throw new ServiceError(
        'CONFLICT',
        `The stored credential for provider ${provider} cannot be opened (it was sealed for another workspace or with another key)`,
        reconnectHint(workspaceId, provider),
      );
    }
    return parseCredential(plaintext, workspaceId, provider);
  }

  /** The refresh_token grant (application/x-www-form-urlencoded); the new token, and the new refresh token if one came. */
  private async refresh(config: ProviderConfig, cred: StoredCredential, workspaceId: string): Promise<StoredCredential> {
    const clientId = cred.clientId ?? config.clientId!;
    const clientSecret = cred.clientSecret ?? config.clientSecret;
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: cred.refreshToken!, client_id: clientId });
    if (clientSecret !== undefined) form.set('client_secret', clientSecret);
    const url = new URL(config.tokenUrl!);
    const started = this.now();
    const res = await openExchange({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': USER_AGENT },
      body: Buffer.from(form.toString(), 'utf8'),
      guard: this.guard,
      timeoutMs: this.timeoutMs,
      idleTimeoutMs: this.timeoutMs,
    });
    const text = (await readCapped(res, TOKEN_RESPONSE_MAX_BYTES, url.host)).toString('utf8');
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // not JSON: reported below by status
    }
    const status = res.statusCode ?? 0;
    const accessToken = body.access_token;
    if (status !== 200 || typeof accessToken !== 'string' || !TOKEN.test(accessToken)) {
      const secrets = [cred.accessToken, cred.refreshToken, clientSecret, typeof accessToken === 'string' ? accessToken : undefined];
      const code = typeof body.error === 'string' && /^[\w.-]{1,64}$/.test(body.error) ? body.error : undefined;
      const description = typeof body.error_description === 'string' ? redact(body.error_description, secrets).slice(0, 300) : undefined;
      const what = status === 200 ? 'the answer has no usable access_token' : `HTTP ${status}${code ? ` ${code}` : ''}`;
      const hint = code === 'invalid_grant' || code === 'invalid_client' ? reconnectHint(workspaceId, config.name) : undefined;
      throw new ServiceError(
        'UPSTREAM_ERROR',
        `Refreshing the ${config.name} credential failed: ${url.host} answered ${what}`,
        [description, hint].filter((x) => x !== undefined).join('; ') || undefined,
      );
    }
    const expiresIn = Number(body.expires_in);
    const refreshToken = typeof body.refresh_token === 'string' && body.refresh_token !== '' ? body.refresh_token : cred.refreshToken;
    const fresh: StoredCredential = { ...cred, accessToken };
    if (refreshToken !== undefined) fresh.refreshToken = refreshToken;
    if (Number.isFinite(expiresIn) && expiresIn > 0) fresh.expiresAt = started + expiresIn * 1000;
    else delete fresh.expiresAt;
    return fresh;
  }
}
