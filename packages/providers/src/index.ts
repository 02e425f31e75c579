/**
 * @wds/providers: a workspace's external providers (Google Drive and other OAuth APIs) called on its behalf. The
 * registry comes from PROVIDERS; credentials are opened and refreshed only here; every call goes through the
 * OutboundGuard to the provider's base URL plus a checked path.
 */
export { type AccessTokenOptions, ProviderAuth, type ProviderAuthOptions, USER_AGENT } from './auth.js';
export {
  type CappedRequest,
  DOWNLOAD_MAX_BYTES,
  type DownloadRequest,
  type DownloadResult,
  MAX_REDIRECTS,
  PROXY_MAX_BYTES,
  ProviderClient,
  type ProviderClientOptions,
  type ProviderRequest,
  type ProviderResponse,
  type ProviderStream,
  type RequestBody,
} from './client.js';
export { missingCredential, parseCredential, redact, type StoredCredential, serializeCredential } from './credential.js';
export { checkRequestHeaders, isRefusedHeader, REFUSED_HEADER_PREFIXES, REFUSED_HEADERS, responseHeaders } from './headers.js';
export { buildProviderUrl, checkProviderPath, type ProviderQuery, type QueryValue } from './paths.js';
export {
  DRIVE_PROVIDER,
  isLoopbackLiteral,
  type ParseProvidersOptions,
  type ProviderConfig,
  type ProviderRegistry,
  parseProviders,
} from './registry.js';
export { formatBytes, type SizedStream } from './transport.js';
