/**
 * @wds/effect-runner: FieldMapping evaluation and the outbound HTTP calls of workflow Effect steps and Fetch
 * input sources, behind an SSRF guard (DNS resolved and checked on every connection, OUTBOUND_ALLOWLIST).
 */
export { embeddedIPv4, isSpecialUse } from './addresses.js';
export {
  EFFECT_METHODS,
  effectInputAliases,
  type EffectSpec,
  MAX_RETRIES,
  MAX_TIMEOUT_SECS,
  type PreparedRequest,
  prepareEffectRequest,
  RESERVED_HEADERS,
  validateEffectSpec,
} from './effect-spec.js';
export {
  DEFAULT_BACKOFF_MS,
  DEFAULT_EFFECT_TIMEOUT_MS,
  DEFAULT_MAX_RESPONSE_BYTES,
  type EffectCallOptions,
  type EffectResult,
  runEffect,
} from './effect.js';
export { EffectError, type EffectErrorKind } from './errors.js';
export { guardedLookup, guardedRequest } from './http.js';
export { guardedFetch } from './guarded-fetch.js';
export { FETCH_MAX_BYTES, FETCH_MAX_TIMEOUT_MS, type FetchSourceOptions, type FetchSourceResult, type FetchSpec, fetchSource } from './fetch-source.js';
export { OutboundGuard, type OutboundGuardOptions, parseAllowlist, type Resolver } from './guard.js';
export {
  buildObject,
  evaluateMappings,
  type FieldMapping,
  type InputPathAlias,
  inputPathAlias,
  mappingsFromObject,
  parsePath,
  readInputPath,
  readPath,
  validateFieldMappings,
} from './mappings.js';
export { CONST_MAX_CHARS, FieldMappingSchema, FieldMappingView } from './mapping-schema.js';
