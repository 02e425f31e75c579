/**
 * What a recorded run keeps of each step's input and output (issue 31; docs/workflows.md#step-data), so a run can be
 * read step by step and run again with the same `$input`:
 *
 * - **Masked.** Every secret value of the run's STFs (their `$env`) is replaced by `***` wherever it appears — in
 *   strings, object keys and numbers — before anything is measured or kept. What a step sent as a credential
 *   (headers and query parameters named like one, the user:password of a URL) is kept as `[redacted]`, and its values
 *   are masked in what that step got back (an endpoint echoing the request).
 * - **Capped.** Each value is kept whole when its JSON text has at most WORKFLOW_STEP_DATA_MAX_BYTES bytes (UTF-8);
 *   a larger one is kept as `{ truncated: true, bytes, preview }` — its size and the start of its JSON text, cut on
 *   a character boundary so the marker itself stays within the cap. A cap of 0 keeps nothing.
 * - **Apart.** In memory a step's data travels on its record (`input`, `output`), so a resumed attempt reuses it
 *   with the record; it is stored in `workflow_runs.step_data` (splitStepData), never in `steps`, which run lists
 *   answer, and joined back only for the run view (joinStepData) of a reader who may see the run whole.
 */
import { type EffectSpec, prepareEffectRequest } from '@wds/effect-runner';
import type { InputStep } from './definition.js';
import type { StepRecord } from './engine.js';

export const DEFAULT_STEP_DATA_MAX_BYTES = 64 * 1024;

/** What stands in for a value over the cap. */
export interface TruncatedStepValue {
  truncated: true;
  /** The UTF-8 size of the value's JSON text (secrets masked). */
  bytes: number;
  /** The start of that text. */
  preview: string;
}

/**
 * Turns a value into what a step record keeps (masked, within the cap); undefined when nothing is kept. `alsoMask`:
 * credentials the step itself sent, masked too (in what it got back).
 */
export type StepDataKeeper = (value: unknown, alsoMask?: readonly string[]) => unknown;

const MASK = '***';
export const REDACTED = '[redacted]';

/** Header and query parameter names that carry credentials: their values are never kept. */
const CREDENTIAL_NAME = /auth|token|secret|passw|api[-_]?key|access[-_]?key|cookie|session|signature|credential|^key$/i;
export const isCredentialName = (name: string): boolean => CREDENTIAL_NAME.test(name);

/** A credential sent shorter than this is no secret worth masking everywhere (it would garble every match). */
const MIN_SENT_SECRET = 4;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Replaces every secret value in a text by `***`, the longest first (a secret containing another is not half
 * masked): the rule the STF runtimes apply to logs and errors (@wds/stf-runtime mask.ts). Undefined without secrets.
 */
export function secretMasker(secrets: Iterable<string>): ((text: string) => string) | undefined {
  const values = [...new Set([...secrets].filter((s) => typeof s === 'string' && s.length > 0))].sort((a, b) => b.length - a.length);
  if (values.length === 0) return undefined;
  const pattern = new RegExp(values.map(escapeRegExp).join('|'), 'g');
  return (text) => text.replace(pattern, MASK);
}

/**
 * The JSON text of a value with `mask` applied to every string, object key and number (a secret of digits returned
 * as a number). Masked on the value, not on the text: a secret with a quote in it is escaped in the text and would
 * slip past a mask of the text.
 */
export function maskedJson(value: unknown, mask?: (text: string) => string): string {
  if (!mask) return JSON.stringify(value ?? null) ?? 'null';
  const replacer = (_key: string, v: unknown): unknown => {
    if (typeof v === 'string') return mask(v);
    if (typeof v === 'number') {
      const text = String(v);
      const masked = mask(text);
      return masked === text ? v : masked;
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      // A null prototype: a key `__proto__` stays a key.
      const out: Record<string, unknown> = Object.create(null);
      for (const [k, x] of Object.entries(v)) out[mask(k)] = x;
      return out;
    }
    return v;
  };
  return JSON.stringify(value ?? null, replacer) ?? 'null';
}

/** The longest prefix of `text` whose UTF-8 encoding has at most `maxBytes` bytes (never half a character). */
export function utf8Prefix(text: string, maxBytes: number): string {
  if (maxBytes <= 0) return '';
  const buf = Buffer.from(text);
  if (buf.length <= maxBytes) return text;
  let end = maxBytes;
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** The marker of a value whose JSON text (`bytes` long) is over `maxBytes`: its preview as long as the marker fits. */
export function truncatedValue(text: string, bytes: number, maxBytes: number): TruncatedStepValue {
  const room = maxBytes - Buffer.byteLength(JSON.stringify({ truncated: true, bytes, preview: '' }));
  let preview = utf8Prefix(text, room);
  // Stored as a JSON string, the preview grows by its escapes (each quote of the JSON text it shows): shortened by
  // the excess until it fits. Each round removes at least one byte.
  for (;;) {
    const over = Buffer.byteLength(JSON.stringify(preview)) - 2 - Math.max(room, 0);
    if (over <= 0) break;
    preview = utf8Prefix(preview, Buffer.byteLength(preview) - over);
  }
  return { truncated: true, bytes, preview };
}

/** A value as its JSON text says it, or its marker when the text is over `maxBytes`. */
function withinCap(text: string, maxBytes: number): unknown {
  const bytes = Buffer.byteLength(text);
  return bytes <= maxBytes ? JSON.parse(text) : truncatedValue(text, bytes, maxBytes);
}

/**
 * The keeper of one run: `maxBytes` per value (0: keeps nothing, undefined is answered), the secrets of its STFs
 * masked. A value that cannot be written as JSON (it never comes from a step: they pass JSON) is not kept.
 */
export function stepDataKeeper(opts: { maxBytes: number; secrets: Iterable<string> }): StepDataKeeper | undefined {
  if (!(opts.maxBytes > 0)) return undefined;
  const secrets = [...opts.secrets];
  const mask = secretMasker(secrets);
  return (value, alsoMask = []) => {
    const sent = alsoMask.filter((s) => s.length >= MIN_SENT_SECRET);
    try {
      return withinCap(maskedJson(value, sent.length > 0 ? secretMasker([...secrets, ...sent]) : mask), opts.maxBytes);
    } catch {
      return undefined;
    }
  };
}

/** A credential value as sent and, for `Bearer x` / `Basic x`, the credential after its scheme too. */
const sentValues = (value: string): string[] => {
  const scheme = /^[A-Za-z][A-Za-z0-9._~+/-]*\s+(\S.*)$/.exec(value);
  return scheme?.[1] ? [value, scheme[1]] : [value];
};

/** What a request is kept as, and the credentials it sent (to be masked in its answer). */
export interface KeptRequest {
  request: { method: string; url: string; headers: Record<string, string>; body?: unknown };
  sent: string[];
}

/** Headers with those named like credentials `[redacted]`; their values go to `sent`. */
function keptHeaders(headers: Record<string, string>, sent: string[]): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'content-length') continue;
    if (isCredentialName(name)) {
      sent.push(...sentValues(value));
      out[name] = REDACTED;
    } else out[name] = value;
  }
  return out;
}

/**
 * A URL without its user:password (the runner sends it as Basic auth: `authorization` is then set `[redacted]`) and
 * with the values of query parameters named like credentials `[redacted]`.
 */
function keptUrl(url: URL, headers: Record<string, string>, sent: string[]): string {
  const kept = new URL(url.href);
  if (kept.username || kept.password) {
    const user = decodeURIComponent(kept.username);
    const password = decodeURIComponent(kept.password);
    sent.push(`${user}:${password}`, Buffer.from(`${user}:${password}`).toString('base64'), ...(password ? [password] : []));
    kept.username = '';
    kept.password = '';
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'authorization')) headers.authorization = REDACTED;
  }
  for (const name of new Set(kept.searchParams.keys())) {
    if (!isCredentialName(name)) continue;
    sent.push(...kept.searchParams.getAll(name));
    kept.searchParams.set(name, REDACTED);
  }
  return kept.href;
}

/** An input step's input: its source as defined, a Fetch source's credentials redacted. */
export function sourceInput(source: InputStep['source']): { input: unknown; sent: string[] } {
  if (source.type !== 'Fetch') return { input: source, sent: [] };
  const sent: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(source.url);
  } catch {
    // Kept as written: the step fails on it, and a URL that does not parse has no parts to pick out.
  }
  const headers = keptHeaders(source.headers ?? {}, sent);
  const input = {
    type: 'Fetch',
    method: (source.method ?? 'GET').toUpperCase(),
    url: url ? keptUrl(url, headers, sent) : source.url,
    headers,
    ...(source.body !== undefined ? { body: source.body } : {}),
    ...(source.timeout_secs !== undefined ? { timeout_secs: source.timeout_secs } : {}),
  };
  return { input, sent };
}

/**
 * An effect step's input: the request its effect makes of the step's input, as the runner builds it (URL with its
 * query, headers, JSON body), credentials redacted. Undefined when the request cannot be built (the step fails).
 */
export function effectRequest(spec: EffectSpec, input: unknown): KeptRequest | undefined {
  let prepared: ReturnType<typeof prepareEffectRequest>;
  try {
    prepared = prepareEffectRequest(spec, input);
  } catch {
    return undefined;
  }
  const sent: string[] = [];
  const headers = keptHeaders(prepared.headers, sent);
  const url = keptUrl(prepared.url, headers, sent);
  const body = prepared.body ? (JSON.parse(prepared.body.toString('utf8')) as unknown) : undefined;
  return { request: { method: prepared.method, url, headers, ...(body !== undefined ? { body } : {}) }, sent };
}

/** One step's data as `workflow_runs.step_data` holds it, found by the step's kind and index. */
export interface StoredStepData {
  kind: StepRecord['kind'];
  index: number;
  input?: unknown;
  output?: unknown;
}

/**
 * What all the step data of one run may add up to (a run of many steps at a large cap): past it, the later values are
 * stored as markers without a preview, so the run's record can always be written (a jsonb value is at most 255 MiB).
 */
export const STEP_DATA_RUN_MAX_BYTES = 64 * 1024 * 1024;

/** The step data to store, within STEP_DATA_RUN_MAX_BYTES in all: as it is, or its later values as bare markers. */
export function boundedStepData(data: readonly StoredStepData[], maxBytes = STEP_DATA_RUN_MAX_BYTES): { data: StoredStepData[]; text: string } | null {
  if (data.length === 0) return null;
  const whole = JSON.stringify(data);
  if (Buffer.byteLength(whole) <= maxBytes) return { data: [...data], text: whole };
  let used = 0;
  const keep = (value: unknown): unknown => {
    const bytes = Buffer.byteLength(JSON.stringify(value ?? null));
    if (used + bytes > maxBytes) return { truncated: true, bytes, preview: '' } satisfies TruncatedStepValue;
    used += bytes;
    return value;
  };
  const bounded = data.map((d) => ({
    kind: d.kind,
    index: d.index,
    ...('input' in d ? { input: keep(d.input) } : {}),
    ...('output' in d ? { output: keep(d.output) } : {}),
  }));
  return { data: bounded, text: JSON.stringify(bounded) };
}

/** Step records without their data (for `steps`), and the data (for `step_data`). */
export function splitStepData(records: readonly StepRecord[]): { steps: StepRecord[]; data: StoredStepData[] } {
  const steps: StepRecord[] = [];
  const data: StoredStepData[] = [];
  for (const { input, output, ...record } of records) {
    steps.push(record);
    if (input === undefined && output === undefined) continue;
    data.push({ kind: record.kind, index: record.index, ...(input !== undefined ? { input } : {}), ...(output !== undefined ? { output } : {}) });
  }
  return { steps, data };
}

/** A step record as the run view answers it: with its input and output, null when none was kept or the reader may not see them. */
export type StepRecordWithData = Omit<StepRecord, 'input' | 'output'> & { input: unknown; output: unknown };

/** The records with their stored data (`visible`), or with `input` and `output` null for every step. */
export function joinStepData(steps: readonly StepRecord[], stored: unknown, visible: boolean): StepRecordWithData[] {
  const byStep = new Map<string, StoredStepData>();
  if (visible && Array.isArray(stored)) {
    for (const d of stored as StoredStepData[]) if (d && typeof d === 'object') byStep.set(`${d.kind}:${d.index}`, d);
  }
  return steps.map(({ input: _input, output: _output, ...s }) => {
    const d = byStep.get(`${s.kind}:${s.index}`);
    return { ...s, input: d?.input ?? null, output: d?.output ?? null };
  });
}
