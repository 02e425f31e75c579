/**
 * An effect definition (one HTTP call of a workflow Effect step): its validation when saved and how an input
 * document turns it into a request (headers and query from evaluateMappings, JSON body from buildObject).
 */
import { EffectError } from './errors.js';
import { HEADER_NAME, INVALID_HEADER_VALUE } from './http.js';
import { buildObject, evaluateMappings, type FieldMapping, type InputPathAlias, inputPathAliases, targetSegments, validateFieldMappings } from './mappings.js';

export interface EffectSpec {
  url: string;
  method: string;
  header_mappings: FieldMapping[];
  body_mappings: FieldMapping[];
  query_mappings?: FieldMapping[] | null;
  timeout_secs?: number | null;
  retries?: number | null;
}

export const EFFECT_METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'];
/** Headers the runner sets itself; a mapping may not. */
export const RESERVED_HEADERS: readonly string[] = ['host', 'content-length', 'transfer-encoding', 'connection', 'idempotency-key'];
export const MAX_TIMEOUT_SECS = 300;
export const MAX_RETRIES = 5;

const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkUrl(value: unknown): string[] {
  if (typeof value !== 'string' || value.trim() === '') return ['url: must be an absolute http or https URL'];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [`url: '${value}' is not an absolute URL`];
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return [`url: must use http or https, not ${url.protocol.slice(0, -1)}`];
  if (url.hostname === '') return ['url: must name a host'];
  return [];
}

function checkHeaderTargets(mappings: FieldMapping[]): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  mappings.forEach((m, i) => {
    const at = `header_mappings[${i}].target`;
    const name = m.target.trim().toLowerCase();
    if (!HEADER_NAME.test(m.target)) problems.push(`${at}: '${m.target}' is not a valid header name`);
    else if (RESERVED_HEADERS.includes(name)) problems.push(`${at}: ${m.target} is set by the runner and may not be mapped`);
    else if (seen.has(name)) problems.push(`${at}: header '${m.target}' is already set by header_mappings[${seen.get(name)}]`);
    else seen.set(name, i);
    if (m.source.type === 'Const' && INVALID_HEADER_VALUE.test(toText(m.source.value))) {
      problems.push(`header_mappings[${i}].source.value: contains characters not allowed in a header`);
    }
  });
  return problems;
}

function checkBodyTargets(mappings: FieldMapping[]): string[] {
  const problems: string[] = [];
  const paths = mappings.map((m) => targetSegments(m.target));
  paths.forEach((segments, i) => {
    const at = `body_mappings[${i}].target`;
    if (segments.some((s) => s === '')) problems.push(`${at}: '${mappings[i]!.target}' has an empty segment`);
    else if (segments.some((s) => UNSAFE_KEYS.has(s))) problems.push(`${at}: '${mappings[i]!.target}' uses a reserved key`);
    const key = segments.join('.');
    paths.forEach((other, j) => {
      if (j === i) return;
      const otherKey = other.join('.');
      if (otherKey === key && j < i) problems.push(`${at}: '${mappings[i]!.target}' is already set by body_mappings[${j}]`);
      if (key.startsWith(`${otherKey}.`)) problems.push(`${at}: '${mappings[i]!.target}' nests under body_mappings[${j}] ('${mappings[j]!.target}'), which sets a value`);
    });
  });
  return problems;
}

function checkInteger(value: unknown, name: string, min: number, max: number): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) return [`${name}: must be an integer from ${min} to ${max}`];
  return [];
}

/** Validates an effect definition when it is saved (url http/https with a host, method in GET POST PUT PATCH DELETE HEAD, mappings, timeout_secs 1..300, retries 0..5); returns problems as strings. */
export function validateEffectSpec(spec: unknown): string[] {
  if (!isRecord(spec)) return ['effect: must be an object'];
  const problems = checkUrl(spec.url);
  const method = typeof spec.method === 'string' ? spec.method.toUpperCase() : undefined;
  if (method === undefined || !EFFECT_METHODS.includes(method)) problems.push(`method: must be one of ${EFFECT_METHODS.join(', ')}`);

  const headerProblems = validateFieldMappings(spec.header_mappings, 'header_mappings');
  problems.push(...headerProblems);
  if (headerProblems.length === 0) problems.push(...checkHeaderTargets(spec.header_mappings as FieldMapping[]));

  const bodyProblems = validateFieldMappings(spec.body_mappings, 'body_mappings');
  problems.push(...bodyProblems);
  if (bodyProblems.length === 0) {
    const body = spec.body_mappings as FieldMapping[];
    problems.push(...checkBodyTargets(body));
    if ((method === 'GET' || method === 'HEAD') && body.length > 0) problems.push(`body_mappings: a ${method} request carries no body; remove the mappings`);
  }

  if (spec.query_mappings !== undefined && spec.query_mappings !== null) problems.push(...validateFieldMappings(spec.query_mappings, 'query_mappings'));
  problems.push(...checkInteger(spec.timeout_secs, 'timeout_secs', 1, MAX_TIMEOUT_SECS));
  problems.push(...checkInteger(spec.retries, 'retries', 0, MAX_RETRIES));
  return problems;
}

/** A mapped value as header or query text: strings as they are, anything else as JSON. */
export function toText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

/**
 * The mappings of an effect that read this input through the `$.input.…` rule (mappings.ts), for the run record:
 * `at` is `header_mappings[0]`, `query_mappings[1]` or `body_mappings[2]`.
 */
export function effectInputAliases(spec: EffectSpec, input: unknown): InputPathAlias[] {
  return [
    ...inputPathAliases(spec.header_mappings, input, 'header_mappings'),
    ...inputPathAliases(spec.query_mappings ?? [], input, 'query_mappings'),
    ...inputPathAliases(spec.body_mappings, input, 'body_mappings'),
  ];
}

export interface PreparedRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/**
 * The request a (valid) effect makes for an input: mapped headers, query parameters appended to the URL's own,
 * and a JSON body for POST, PUT and PATCH (and DELETE when it has body mappings). Throws EffectError 'invalid'
 * when a mapped header value cannot be sent.
 */
export function prepareEffectRequest(spec: EffectSpec, input: unknown): PreparedRequest {
  const method = spec.method.toUpperCase();
  const url = new URL(spec.url);
  // A missing value (null) leaves its query parameter or header out rather than sending the text "null".
  for (const [name, value] of Object.entries(evaluateMappings(spec.query_mappings ?? [], input))) {
    if (value !== null && value !== undefined) url.searchParams.append(name, toText(value));
  }

  // no prototype: a mapped header named '__proto__' stays a header
  const headers: Record<string, string> = Object.assign(Object.create(null), {
    accept: 'application/json, text/plain;q=0.9, */*;q=0.8',
    'user-agent': 'wds-effect-runner',
  });
  for (const [name, value] of Object.entries(evaluateMappings(spec.header_mappings, input))) {
    if (value === null || value === undefined) continue;
    const text = toText(value);
    if (INVALID_HEADER_VALUE.test(text)) throw new EffectError('invalid', `header ${name}: the mapped value contains characters not allowed in a header`);
    headers[name.toLowerCase()] = text;
  }

  const wantsBody = method === 'POST' || method === 'PUT' || method === 'PATCH' || (method === 'DELETE' && spec.body_mappings.length > 0);
  if (!wantsBody) return { url, method, headers };
  const body = Buffer.from(JSON.stringify(buildObject(spec.body_mappings, input)));
  headers['content-type'] ??= 'application/json';
  headers['content-length'] = String(body.length);
  return { url, method, headers, body };
}
