import * as v from 'valibot';
import { Integer, NonNegative, Timestamp, Uuid } from './common.js';

/** The views of the SaaS proxy: the envelope the service builds around a provider's answer. */

/** The provider's response headers, lower-case names (Set-Cookie and hop-by-hop headers removed). */
const ProviderHeaders = v.record(v.string(), v.string());

/**
 * saas_proxy: the provider's answer, whatever its status (a 4xx or 5xx of the provider is still a 200 here; a
 * redirect is returned, not followed). `body` is the provider's body as it came — text, or base64 when
 * `body_encoding` says so — and is not interpreted by the service.
 */
export const SaasProxyResult = v.object({
  /** The provider's HTTP status. */
  status: Integer,
  headers: ProviderHeaders,
  body: v.string(),
  /** Present (base64) when the provider's body is not textual. */
  body_encoding: v.optional(v.literal('base64')),
});
/**
 * saas_proxy_download: the stored file when the provider answered 2xx; otherwise (still a 200 here) the provider's
 * status and the start of its error body as text, and nothing is stored.
 */
export const SaasProxyDownload = v.union([
  v.object({
    status: Integer,
    headers: ProviderHeaders,
    /** The stored file's id. */
    id: Uuid,
    filename: v.string(),
    content_type: v.string(),
    size: NonNegative,
    created_at: Timestamp,
  }),
  v.object({
    status: Integer,
    headers: ProviderHeaders,
    /** The provider's error body (its first bytes, as UTF-8 text): whatever the provider sent. */
    error_body: v.string(),
  }),
]);
