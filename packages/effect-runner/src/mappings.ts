/**
 * FieldMappings: how an effect step turns its input document into headers, query parameters and a JSON body.
 * A mapping reads a path from the input (`Variable`) or carries a literal JSON value (`Const`) and names a target.
 */
import type * as v from 'valibot';
import type { FieldMappingView } from './mapping-schema.js';

/** `source` — `Variable`: a path into the input. `Const`: any JSON value, used as it is (a string, a number, an object, …). */
export type FieldMapping = v.InferOutput<typeof FieldMappingView>;

type PathToken = string | number;

/**
 * Splits a path into keys and array indexes: 'a.b', '$.a.b', 'items[0].id', "a['odd key']"; '$' and '' are the
 * whole document ([]). Returns null when the path is malformed (empty segment, unclosed bracket).
 */
export function parsePath(path: string): PathToken[] | null {
  let rest = path.trim();
  if (rest === '' || rest === '$') return [];
  if (rest.startsWith('$.') || rest.startsWith('$[')) rest = rest.slice(1);
  if (rest.startsWith('.')) rest = rest.slice(1);
  const tokens: PathToken[] = [];
  let i = 0;
  while (i < rest.length) {
    if (rest[i] === '[') {
      const close = rest.indexOf(']', i);
      if (close < 0) return null;
      const inner = rest.slice(i + 1, close).trim();
      if (/^\d+$/.test(inner)) tokens.push(Number(inner));
      else if (/^'[^']*'$|^"[^"]*"$/.test(inner)) tokens.push(inner.slice(1, -1));
      else return null;
      i = close + 1;
    } else {
      let end = i;
      while (end < rest.length && rest[end] !== '.' && rest[end] !== '[') end++;
      if (end === i) return null;
      tokens.push(rest.slice(i, end));
      i = end;
    }
    if (rest[i] === '.') {
      i++;
      if (i >= rest.length || rest[i] === '[') return null;
    } else if (i < rest.length && rest[i] !== '[') {
      return null;
    }
  }
  return tokens;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads a path from a JSON document: 'a.b', '$.a.b', 'items[0].id', '$' or '' (whole doc). A missing field → null. */
export function readPath(doc: unknown, path: string): unknown {
  const tokens = parsePath(path);
  return tokens === null ? null : readTokens(doc, tokens);
}

function readTokens(doc: unknown, tokens: PathToken[]): unknown {
  let current: unknown = doc;
  for (const token of tokens) {
    if (Array.isArray(current) && (typeof token === 'number' || /^\d+$/.test(token))) {
      current = current[Number(token)];
    } else if (isRecord(current) && Object.hasOwn(current, token)) {
      current = current[token];
    } else {
      return null;
    }
    if (current === undefined) return null;
  }
  return current === undefined ? null : current;
}

/** Sets an own property (so a key like '__proto__' is data, never the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The tokens a Variable path of an effect mapping reads from the effect's input. One rule beyond readPath, for
 * definitions written for the origin platform, whose published examples address the step's input as `$.input.…`
 * while its documentation (and this service) address it as `$.…`: a path whose first key is `input` reads the
 * input as written when the input is an object that has an own `input` field, and otherwise reads the rest of the
 * path from the input itself (`$.input.message` ≡ `$.message`, `$.input` ≡ `$`). Null: a malformed path.
 */
function inputTokens(input: unknown, path: string): { tokens: PathToken[]; aliased: boolean } | null {
  const tokens = parsePath(path);
  if (tokens === null) return null;
  // Only the origin's `$.` spelling: a path written in this service's own dotted form (`input.x`) reads as written.
  const originStyle = path.trimStart().startsWith('$.');
  if (!originStyle || tokens[0] !== 'input' || (isRecord(input) && Object.hasOwn(input, 'input'))) return { tokens, aliased: false };
  return { tokens: tokens.slice(1), aliased: true };
}

/** Reads a Variable path of an effect mapping from the effect's input (readPath, with the `$.input.…` rule above). */
export function readInputPath(input: unknown, path: string): unknown {
  const read = inputTokens(input, path);
  return read === null ? null : readTokens(input, read.tokens);
}

/**
 * When `path` read `input` through the `$.input.…` rule: the path that reads the same without it (`$.message` for
 * `$.input.message`, `$` for `$.input`); null when it was read as written.
 */
export function inputPathAlias(input: unknown, path: string): string | null {
  const read = inputTokens(input, path);
  if (read === null || !read.aliased) return null;
  return `$${read.tokens.map((t) => (typeof t === 'number' ? `[${t}]` : /^[A-Za-z_$][\w$-]*$/.test(t) ? `.${t}` : `[${JSON.stringify(t)}]`)).join('')}`;
}

function sourceValue(mapping: FieldMapping, input: unknown): unknown {
  return mapping.source.type === 'Const' ? mapping.source.value : readInputPath(input, mapping.source.value);
}

/**
 * The origin platform's way of writing effect mappings — an object `{ target: value }` where a string value starting
 * with `$.` is a Variable and any other value a Const (`{ "Content-Type": "application/json", "text": "$.message" }`)
 * — as a FieldMapping array, in the object's key order.
 */
export function mappingsFromObject(mappings: Record<string, unknown>): FieldMapping[] {
  return Object.entries(mappings).map(([target, value]) => ({
    source: typeof value === 'string' && value.startsWith('$.') ? { type: 'Variable', value } : { type: 'Const', value },
    target,
  }));
}

/** A mapping that read the effect's input through the `$.input.…` rule: where, the path as written, the path without it. */
export interface InputPathAlias {
  at: string;
  found: string;
  use: string;
}

/** The Variable mappings of `mappings` (named `where`) that read `input` through the `$.input.…` rule. */
export function inputPathAliases(mappings: FieldMapping[], input: unknown, where: string): InputPathAlias[] {
  const out: InputPathAlias[] = [];
  mappings.forEach((m, i) => {
    if (m.source.type !== 'Variable') return;
    const use = inputPathAlias(input, m.source.value);
    if (use !== null) out.push({ at: `${where}[${i}]`, found: m.source.value, use });
  });
  return out;
}

/** target → value (Variable: the path read from the input; Const: the value as it is). Targets are flat keys; a later mapping wins. */
export function evaluateMappings(mappings: FieldMapping[], input: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const mapping of mappings) setOwn(out, mapping.target, sourceValue(mapping, input));
  return out;
}

/** The segments of a body target: 'customer.email' → ['customer', 'email'] (a leading '$.' is ignored). */
export function targetSegments(target: string): string[] {
  const trimmed = target.trim();
  const path = trimmed.startsWith('$.') ? trimmed.slice(2) : trimmed;
  return path.split('.');
}

/**
 * Like evaluateMappings but dotted targets nest: 'customer.email' → { customer: { email } } (used for JSON bodies).
 * A later mapping wins; one that nests under a non-object value set earlier replaces it with an object
 * (validateEffectSpec reports such conflicts when the effect is saved).
 */
export function buildObject(mappings: FieldMapping[], input: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const mapping of mappings) {
    const segments = targetSegments(mapping.target).filter((s) => s !== '');
    const last = segments.pop();
    if (last === undefined) continue;
    let node = out;
    for (const segment of segments) {
      const next = Object.hasOwn(node, segment) ? node[segment] : undefined;
      if (isRecord(next)) {
        node = next;
      } else {
        const created: Record<string, unknown> = {};
        setOwn(node, segment, created);
        node = created;
      }
    }
    setOwn(node, last, sourceValue(mapping, input));
  }
  return out;
}

/** Problems with a mappings array as human-readable strings ('header_mappings[1].source.type: must be Variable or Const'); [] when valid. `where` prefixes messages. */
export function validateFieldMappings(value: unknown, where: string): string[] {
  if (!Array.isArray(value)) return [`${where}: must be an array of field mappings`];
  const problems: string[] = [];
  const seen = new Map<string, number>();
  value.forEach((mapping: unknown, index) => {
    const at = `${where}[${index}]`;
    if (!isRecord(mapping)) {
      problems.push(`${at}: must be an object { source, target }`);
      return;
    }
    const source = mapping.source;
    if (!isRecord(source)) {
      problems.push(`${at}.source: must be an object { type, value }`);
    } else {
      if (source.type !== 'Variable' && source.type !== 'Const') problems.push(`${at}.source.type: must be Variable or Const`);
      if (source.type === 'Const') {
        // Any JSON value; a missing one is refused rather than sent as null.
        if (source.value === undefined) problems.push(`${at}.source.value: is required (any JSON value)`);
      } else if (typeof source.value !== 'string') {
        problems.push(`${at}.source.value: must be a string`);
      } else if (source.type === 'Variable' && parsePath(source.value) === null) {
        problems.push(`${at}.source.value: '${source.value}' is not a valid path (use a.b, $.a.b or items[0].id)`);
      }
    }
    const target = mapping.target;
    if (typeof target !== 'string' || target.trim() === '') {
      problems.push(`${at}.target: must be a non-empty string`);
    } else if (seen.has(target)) {
      problems.push(`${at}.target: '${target}' is already set by ${where}[${seen.get(target)}]`);
    } else {
      seen.set(target, index);
    }
  });
  return problems;
}
