import { isUuid } from '@wds/db';
import { ServiceError, unauthorized, validationError } from '@wds/errors';
import type { Context } from 'hono';
import type { AppEnv } from './env.js';

/**
 * Rules every request's input obeys before a handler sees it (issue 14: no 5xx for any input). PostgreSQL text
 * and jsonb cannot hold U+0000, jsonb refuses unpaired UTF-16 surrogates, and recursion over a JSON value must
 * end: such input is a 400 naming the field here, never a database error later.
 */

/** Containers (objects and arrays) a JSON body may nest, counting the body itself. */
export const MAX_JSON_DEPTH = 64;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const OBJECT_SCHEMAS = new Set(['object', 'strict_object', 'loose_object', 'object_with_rest']);

/** Why a text cannot be stored (NUL, an unpaired surrogate), or undefined when it can. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  if (LONE_SURROGATE.test(s)) return 'must not contain an unpaired UTF-16 surrogate (\\uD800-\\uDFFF)';
  return undefined;
}

/** Cut short: keys are the client's and may be long. */
const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/**
 * Walks a parsed JSON value (iteratively: its depth is what is being checked): every string and key must be
 * storable text, every number finite (`1e999` parses to Infinity), and nesting at most MAX_JSON_DEPTH deep.
 * Throws 400 VALIDATION_ERROR naming the first offending field (under `root`, if given) as `field: problem`, with
 * the path inside it when deeper (`metadata: … (at metadata.tags.0)`, paths as valibot writes them).
 */
export function checkJsonValue(value: unknown, root = ''): void {
  // Paths are built only for the error: a large body has many nodes and almost never a bad one.
  interface Entry {
    node: unknown;
    key: string;
    parent: Entry | undefined;
    depth: number;
  }
  const pathOf = (e: Entry | undefined): string => {
    const keys: string[] = [];
    for (let at = e; at; at = at.parent) if (at.key) keys.unshift(at.key);
    return keys.join('.');
  };
  const fail = (e: Entry, problem: string) => {
    const path = pathOf(e);
    const field = path.split('.')[0] || '(body)';
    return validationError(`${clip(field)}: ${problem}${path.includes('.') ? ` (at ${clip(path)})` : ''}`);
  };
  const stack: Entry[] = [{ node: value, key: root, parent: undefined, depth: 1 }];
  for (let e = stack.pop(); e; e = stack.pop()) {
    const { node, depth } = e;
    if (typeof node === 'string') {
      const problem = textProblem(node);
      if (problem) throw fail(e, problem);
    } else if (typeof node === 'number') {
      if (!Number.isFinite(node)) throw fail(e, 'must be a finite number');
    } else if (typeof node === 'object' && node !== null) {
      if (depth > MAX_JSON_DEPTH) throw fail(e, `must not nest deeper than ${MAX_JSON_DEPTH} levels`);
      if (Array.isArray(node)) {
        for (let i = node.length - 1; i >= 0; i--) stack.push({ node: node[i], key: String(i), parent: e, depth: depth + 1 });
      } else {
        for (const [key, val] of Object.entries(node)) {
          const problem = textProblem(key);
          if (problem) throw fail(e, `keys ${problem}`);
          stack.push({ node: val, key, parent: e, depth: depth + 1 });
        }
      }
    }
  }
}

/** Whether a body schema describes a JSON object (valibot's own object check lets arrays through). */
export const isObjectSchema = (schema: { type: string } | undefined): boolean => schema !== undefined && OBJECT_SCHEMAS.has(schema.type);

/** A body that must be a JSON object: arrays, scalars and null are 400 rather than read as `{}`. */
export function requireObject(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw validationError('the body must be a JSON object');
}

/** Path parameters that name a resource by id: `:id`, `:workspaceId`, `:fileId`, … */
/** Path parameters named `id` or `…Id` are UUIDs. */
export const isIdParam = (name: string) => name === 'id' || name.endsWith('Id');

/** Path parameters (or the tool arguments that stand for them): ids are UUIDs, other values storable text. */
export function checkPathParams(params: Record<string, string>, anonymousOptional = false): void {
  for (const [name, value] of Object.entries(params)) {
    if (isIdParam(name)) {
      if (isUuid(value)) continue;
      if (anonymousOptional) throw unauthorized();
      throw new ServiceError('NOT_FOUND', 'Not found', `path parameter ${name} is not a UUID`);
    }
    const problem = textProblem(value);
    if (problem) throw validationError(`path parameter ${name}: ${problem}`);
  }
}

/**
 * Path parameters, query string and header values, before anything is looked up: an id that is not a UUID names
 * nothing (404, or 401 for an anonymous caller of an optional-auth route, who learns nothing); other parameters,
 * query values and headers must be storable text (400).
 */
export function checkRequestText(
  c: Context<AppEnv>,
  anonymousOptional: boolean,
  params = c.req.param() as Record<string, string>,
): void {
  checkPathParams(params, anonymousOptional);
  for (const [name, values] of Object.entries(c.req.queries())) {
    const problem = textProblem(name) ?? values.map(textProblem).find(Boolean);
    if (problem) throw validationError(`query parameter ${textProblem(name) ? '(a name)' : clip(name)}: ${problem}`);
  }
  // Fetch and Node's HTTP parser already refuse NUL in headers and hold them as byte strings; kept for any adapter.
  // Under @hono/node-server the header values are read where Node keeps them: walking `c.req.raw.headers` would
  // build a whole fetch Headers object for every request (issue 16).
  const rawHeaders = (c.env as { incoming?: { rawHeaders?: unknown } } | undefined)?.incoming?.rawHeaders;
  if (Array.isArray(rawHeaders)) {
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const name = String(rawHeaders[i]);
      // HTTP/2 pseudo-headers (:path, …) are not headers of the request (Headers leaves them out too).
      const problem = name.startsWith(':') ? undefined : textProblem(String(rawHeaders[i + 1]));
      if (problem) throw validationError(`header ${name.toLowerCase()}: ${problem}`);
    }
    return;
  }
  c.req.raw.headers.forEach((value, name) => {
    const problem = textProblem(value);
    if (problem) throw validationError(`header ${name}: ${problem}`);
  });
}
