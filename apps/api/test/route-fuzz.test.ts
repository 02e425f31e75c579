import { ERROR_STATUS } from '@wds/errors';
import fc from 'fast-check';
import type * as v from 'valibot';
import { is } from 'valibot';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { routes } from '../src/app.js';
import { inputErrorOf } from '../src/http/db-errors.js';
import { MAX_JSON_DEPTH } from '../src/http/input.js';
import type { AnyRoute } from '../src/http/route.js';
import { ADMIN_TOKEN, Harness, short } from './support.js';

/**
 * Issue 14, "no 5xx for any input": every operation of the route table gets malformed, oversized, wrong-typed and
 * hostile input — NUL, lone surrogates, huge numbers, deep nesting, non-UUID ids, arrays where objects belong — in
 * its path parameters, query string, workspace header and body, as the workspace admin, a member, nobody and a
 * garbage token. Bodies and queries are generated from the route's own valibot schema (plausible shapes, some
 * leaves hostile), so handlers run deep; raw hostile bodies and query strings come on top.
 *
 * Invariants: never a 5xx (but the few answers that mean "not configured in this test process"); every 4xx is the
 * one error envelope `{ error, code, details? }` whose code maps to that status; and input the rules refuse
 * (docs/http-api.md, "Input rules") is refused: a NUL or an unpaired surrogate anywhere in a JSON body, a number
 * JSON cannot hold, nesting past MAX_JSON_DEPTH, a non-object body where the route takes an object, a NUL in the
 * path or query, an id in the path that is not a UUID.
 */

const SEED = 1414;
const RUNS = 14;
const FAKE_ID = '01900000-0000-7000-8000-000000000000';
const b64 = (s: string) => Buffer.from(s).toString('base64');

type User = Awaited<ReturnType<Harness['user']>>;
let h: Harness;
let owner: User;
let member: User;
let ws: { id: string };
let other: { id: string };
/** A real value for each path parameter, so that a well-formed request reaches deep into its handler. */
const real: Record<string, string> = {};

async function must(what: string, r: Promise<{ status: number; body: any; headers: Headers }>, status = 201) {
  const res = await r;
  if (res.status !== status) throw new Error(`setup ${what}: ${res.status} ${short(res.body)}`);
  return res;
}

beforeAll(async () => {
  // Thousands of requests from one caller in a few seconds: the rate limits are not what is tested here.
  h = await Harness.create({ RATE_LIMIT_PER_PRINCIPAL: '0', RATE_LIMIT_PER_WORKSPACE: '0' });
  owner = await h.user('owner');
  member = await h.user('member');
  ws = await h.workspace(owner.token, 'Fuzz');
  other = await h.workspace(member.token, 'Other');
  const t = owner.token;
  const inWs = { token: t, workspace: ws.id };
  real.id = ws.id;
  real.userId = member.id;
  real.memberId = (await h.addMember(t, ws.id, member.email, 'member')).id;
  real.invitationId = (await must('invitation', h.call('POST', `/api/v1/workspaces/${ws.id}/members`, { token: t, body: { email: h.uniqueEmail('invitee'), role: 'member' } }))).body.invitation.id;
  real.keyId = (await must('api key', h.call('POST', '/api/v1/api-keys', { token: t, body: { name: 'fuzz' } }))).body.id;
  await must('redirect uri', h.call('POST', `/api/v1/workspaces/${ws.id}/redirect-uris`, { token: t, body: { redirect_uri: 'https://127.0.0.1/cb' } }));
  await h.sqlOk(t, ws.id, 'CREATE TABLE notes (body text, n int)');
  real.table = 'notes';
  real.groupId = await h.allowAll(t, ws.id, [owner.id, member.id], ['notes']);
  real.policyId = await h.policy(t, ws.id, { policy_group_id: real.groupId, table_name: 'notes', operation: 'select', condition: { n: 1 } });
  await h.sqlOk(t, ws.id, "INSERT INTO notes (body, n) VALUES ('hello', 1)");
  real.proposalId = (await must('proposal', h.call('POST', `/api/v1/workspaces/${ws.id}/sql/proposals`, { token: t, body: { sql: "INSERT INTO notes (body, n) VALUES ('p', 2)" } }))).body.id;
  // Decided, so that a fuzzed ?wait= answers at once instead of holding its request for up to a minute.
  await must('reject', h.call('POST', `/api/v1/workspaces/${ws.id}/sql/proposals/${real.proposalId}/reject`, { token: t, body: {} }), 200);
  // Effects point at loopback, which the outbound guard refuses: nothing here reaches the network.
  real.effectId = (
    await must('effect', h.call('POST', '/api/v1/effects', { ...inWs, body: { name: 'e', version: '1', url: 'https://127.0.0.1/hook', method: 'POST', header_mappings: [], body_mappings: [] } }))
  ).body.id;
  // STFs need a working runtime; without one their routes are still fuzzed, with ids that name nothing.
  const stf = await h.call('POST', '/api/v1/stfs', { ...inWs, body: { name: 's', version: '1', runtime: 'javascript', code: b64('return { ok: true }') } });
  real.stfId = stf.status === 201 ? stf.body.id : FAKE_ID;
  real.stfVersionId = stf.status === 201 ? stf.body.version.id : FAKE_ID;
  real.envKey = 'API_TOKEN';
  if (stf.status === 201) await must('secret', h.call('POST', `/api/v1/stfs/${real.stfId}/secrets`, { ...inWs, body: { env_key: real.envKey, value: 'v' } }), 200);
  const steps = stf.status === 201 ? [{ stf_version_id: real.stfVersionId }] : [];
  real.workflowId = (await must('workflow', h.call('POST', '/api/v1/workflows', { ...inWs, body: { name: 'w', stf_steps: steps } }))).body.id;
  const run = await h.call('POST', `/api/v1/workflows/${real.workflowId}/execute`, { ...inWs, body: { n: 1 } });
  real.runId = run.headers.get('x-workflow-run-id') ?? FAKE_ID;
  real.scheduleId = (
    await must('schedule', h.call('POST', `/api/v1/workflows/${real.workflowId}/schedules`, { ...inWs, body: { cron: '0 3 * * *', paused: true } }))
  ).body.id;
  real.hookId = (await must('hook', h.call('POST', `/api/v1/workflows/${real.workflowId}/hooks`, { ...inWs, body: { paused: true } }))).body.id;
  real.triggerId = (await must('trigger', h.call('POST', `/api/v1/workflows/${real.workflowId}/triggers`, { ...inWs, body: { event: 'file_uploaded', paused: true } }))).body.id;
  real.docId = (await must('document', h.call('POST', `/api/v1/workspaces/${ws.id}/documents`, { ...inWs, body: { title: 'd', doc_type: 'note', status: 'draft', content: '# hi' } }))).body.id;
  real.fileId = (await must('file', h.call('POST', `/api/v1/workspaces/${ws.id}/files`, { ...inWs, body: { filename: 'a.txt', content: b64('hello') } }))).body.id;
  real.chartId = (await must('chart', h.call('POST', '/api/v1/pinned-charts', { ...inWs, body: { title: 'c', sql_query: 'SELECT 1', chart_type: 'bar' } }))).body.id;
  const setup = `/api/v1/workspaces/${ws.id}/setup`;
  real.ruleId = (await must('prompt rule', h.call('POST', `${setup}/prompt-rules`, { token: t, body: { content: 'be brief' } }))).body.id;
  real.skillId = (await must('skill', h.call('POST', `${setup}/skills`, { token: t, body: { name: 'sk', content: 'do it' } }))).body.id;
  real.templateId = (await must('template', h.call('POST', `${setup}/chat-templates`, { token: t, body: { name: 'tpl', content: 'hi' } }))).body.id;
  real.rootId = FAKE_ID;
  // Not a real provider: a credential stored under it connects nothing, so the proxy never leaves the process.
  real.provider = 'fuzz_provider';
  real.name = (await must('libraries', h.call('GET', '/api/v1/stf-libraries', { token: t }), 200)).body[0]?.name ?? 'x';
}, 120_000);

afterAll(async () => {
  await h?.close();
});

// ------------------------------------------------------------------------------------------------ hostile values

/** Raw JSON number texts that JSON.stringify cannot write: spliced into bodies in place of their marker string. */
const RAW_NUMBERS = ['1e999', '-1e999', '123456789012345678901234567890', '1e-400', '9007199254740993', '-0'];
const rawMarker = (n: string) => `\u0001raw:${n}`;
const toJsonText = (body: unknown): string =>
  JSON.stringify(body).replace(/"\\u0001raw:([^"]*)"/g, (_m, n: string) => n);

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udc00y',
  '\udbff\u0000\udfff',
  '\ufffe\uffff',
  '\u202e\u200f',
  '\u{1F4A9}'.repeat(3),
  "' OR 1=1 --",
  '../../etc/passwd',
  '%00',
  '$user_id',
  '{"a":1}',
  '00000000-0000-0000-0000-000000000000',
  FAKE_ID.toUpperCase(),
  'x'.repeat(70_000),
];
/** Strings of any UTF-16 code units: NUL, controls and surrogate halves are likely, not rare. */
const codeUnits = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\u0000', '\ud800', '\udfff', '\u0001', '\n', '"', '\\', '%', 'a'),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 8,
});
const hostileString = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) }, { weight: 2, arbitrary: codeUnits });

const nest = (depth: number, leaf: unknown, asArray: boolean): unknown => {
  let x = leaf;
  for (let i = 0; i < depth; i++) x = asArray ? [x] : { a: x };
  return x;
};
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(
      1e308,
      -1e308,
      2 ** 63,
      Number.MAX_SAFE_INTEGER + 2,
      -1,
      0,
      1.5,
      ...RAW_NUMBERS.map(rawMarker),
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}, [1, 'x'], { '\u0000': 1 }, { 'k\ud800': 'v' }) },
  { weight: 1, arbitrary: fc.constantFrom(nest(200, 'deep', false), nest(200, 1, true), nest(40, '\u0000', false)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

const realIds = () => Object.entries(real).filter(([k]) => k !== 'provider' && k !== 'name' && k !== 'envKey' && k !== 'table').map(([, v]) => v);

/** Values that may satisfy a leaf schema; the ones that do make a plausible leaf. */
const candidates = (): unknown[] => [
  'notes',
  'x',
  'fuzz',
  'body',
  'select',
  'allow',
  'member',
  'admin',
  'GET',
  'POST',
  'bar',
  'note',
  'draft',
  'API_TOKEN',
  'authorization_code',
  'https://127.0.0.1/cb',
  'fuzz@example.test',
  'SELECT 1',
  'SELECT body FROM notes',
  b64('return 1'),
  '2099-01-01T00:00:00Z',
  'true',
  '10',
  'fuzz_provider',
  'Library',
  'Const',
  ...realIds(),
  0,
  1,
  10,
  100,
  30_000,
  true,
  false,
  null,
];

// --------------------------------------------------------------------------- arbitraries from valibot schemas

type Node = v.GenericSchema & {
  type: string;
  entries?: Record<string, Node>;
  wrapped?: Node;
  options?: unknown[];
  item?: Node;
  key?: Node;
  value?: Node;
  rest?: Node;
};
const OBJECT_TYPES = new Set(['object', 'strict_object', 'loose_object', 'object_with_rest']);

/** A plausible value for the schema where one of the candidates passes it, hostile otherwise (now and then). */
function leaf(schema: Node): fc.Arbitrary<unknown> {
  const fits = candidates().filter((c) => is(schema, c));
  if (schema.type === 'picklist' || schema.type === 'literal') fits.push(...((schema.options as unknown[]) ?? [(schema as { literal?: unknown }).literal]));
  if (fits.length === 0) return hostileValue;
  return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...fits) }, { weight: 1, arbitrary: hostileValue });
}

function fromSchema(schema: Node, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 6) return leaf(schema);
  const inner = (s: Node) => fromSchema(s, depth + 1);
  switch (schema.type) {
    case 'object':
    case 'strict_object':
    case 'loose_object':
    case 'object_with_rest': {
      const entries = schema.entries ?? {};
      const arbs = Object.fromEntries(Object.entries(entries).map(([k, s]) => [k, inner(s)]));
      const required = Object.entries(entries)
        .filter(([, s]) => !['optional', 'nullish', 'exact_optional'].includes(s.type))
        .map(([k]) => k);
      const shaped = fc.oneof(
        { weight: 5, arbitrary: fc.record(arbs, { requiredKeys: required }) },
        { weight: 1, arbitrary: fc.record(arbs, { requiredKeys: [] }) },
        {
          weight: 1,
          arbitrary: fc
            .tuple(fc.record(arbs, { requiredKeys: required }), fc.constantFrom('\u0000', 'x\ud800', '__proto__', 'constructor', 'extra'), hostileValue)
            .map(([o, k, val]) => ({ ...o, [k]: val })),
        },
      );
      return fc.oneof({ weight: 6, arbitrary: shaped }, { weight: 1, arbitrary: hostileValue });
    }
    case 'optional':
    case 'exact_optional':
      return fc.oneof({ weight: 2, arbitrary: inner(schema.wrapped as Node) }, { weight: 1, arbitrary: fc.constant(undefined) });
    case 'nullable':
    case 'nullish':
      return fc.oneof({ weight: 3, arbitrary: inner(schema.wrapped as Node) }, { weight: 1, arbitrary: fc.constant(null) });
    case 'array':
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(inner(schema.item as Node), { maxLength: 3 }) },
        { weight: 1, arbitrary: hostileValue },
      );
    case 'record':
      return fc.oneof(
        { weight: 4, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom('k', 'type', 'content-type'), hostileString), inner(schema.value as Node), { maxKeys: 3 }) },
        { weight: 1, arbitrary: hostileValue },
      );
    case 'union':
    case 'variant':
      return fc.oneof(...(schema.options as Node[]).map(inner));
    case 'unknown':
    case 'any':
    case 'custom':
      return fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostileValue);
    default:
      return leaf(schema);
  }
}

/** One plausible body of the schema: every field present, each leaf the first candidate that fits. */
function plausible(schema: Node, depth = 0): unknown {
  if (depth > 8) return undefined;
  const inner = (s: Node) => plausible(s, depth + 1);
  switch (schema.type) {
    case 'object':
    case 'strict_object':
    case 'loose_object':
    case 'object_with_rest':
      return Object.fromEntries(
        Object.entries(schema.entries ?? {})
          .map(([k, s]) => [k, inner(s)] as const)
          .filter(([, val]) => val !== undefined),
      );
    case 'optional':
    case 'exact_optional':
    case 'nullable':
    case 'nullish':
      return inner(schema.wrapped as Node);
    case 'array':
      return [inner(schema.item as Node)].filter((x) => x !== undefined);
    case 'record':
      return { k: inner(schema.value as Node) ?? 'x' };
    case 'union':
    case 'variant':
      return inner((schema.options as Node[])[0] as Node);
    case 'unknown':
    case 'any':
    case 'custom':
      return { k: 'x' };
    case 'picklist':
      return (schema.options as unknown[])[0];
    case 'literal':
      return (schema as { literal?: unknown }).literal;
    default:
      return candidates().find((c) => is(schema, c));
  }
}

/**
 * Plausible bodies that isolate fields: the required fields alone, then with each optional field in turn (one
 * field that the handler refuses, an unknown group id say, would otherwise hide what the others do).
 */
function plausibleBodies(schema: Node): unknown[] {
  const full = plausible(schema);
  if (!OBJECT_TYPES.has(schema.type) || !full || typeof full !== 'object') return [full];
  const optional = new Set(Object.entries(schema.entries ?? {}).filter(([, s]) => ['optional', 'nullish', 'exact_optional'].includes(s.type)).map(([k]) => k));
  const entries = Object.entries(full as Record<string, unknown>);
  const required = Object.fromEntries(entries.filter(([k]) => !optional.has(k)));
  return [required, ...entries.filter(([k]) => optional.has(k)).map(([k, val]) => ({ ...required, [k]: val }))];
}

/** What replaces one node of a plausible body: wrong types, NUL, surrogates, numbers JSON cannot hold, nesting. */
const MUTANTS: unknown[] = ['a\u0000b', 'x\ud800', rawMarker('1e999'), rawMarker('123456789012345678901234567890'), 2 ** 63, [], {}, nest(80, 'x', false)];

/** The plausible body, and for every node in it the same body with that node (or a key beside it) made hostile. */
function mutations(body: unknown): unknown[] {
  const out: unknown[] = [body];
  const visit = (node: unknown, replace: (x: unknown) => unknown) => {
    for (const m of MUTANTS) out.push(replace(m));
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        visit(child, (x) => replace(node.map((c, j) => (j === i ? x : c))));
      });
    } else if (node && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      out.push(replace({ ...obj, 'k\u0000': 1 }), replace({ ...obj, 'k\udc00': 1 }));
      for (const [k, child] of Object.entries(obj)) visit(child, (x) => replace({ ...obj, [k]: x }));
    }
  };
  visit(body, (x) => x);
  return out;
}

/** A query object from the route's query schema: every value a string, hostile or plausible. */
function queryFromSchema(schema: Node | undefined): fc.Arbitrary<Record<string, string>> {
  const entries = (schema && OBJECT_TYPES.has(schema.type) && schema.entries) || {};
  const value = (s: Node) => {
    const fits = candidates().filter((c): c is string => typeof c === 'string' && is(s, c));
    const hostile = fc.oneof(hostileString, fc.constantFrom('-1', '1e999', '99999999999999999999999', '1.5', '0x10', ' 1'));
    return fits.length ? fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...fits) }, { weight: 2, arbitrary: hostile }) : hostile;
  };
  const arbs = Object.fromEntries(Object.entries(entries).map(([k, s]) => [k, value(s)]));
  return fc.tuple(fc.record(arbs, { requiredKeys: [] }), fc.option(fc.tuple(hostileString, hostileString), { nil: undefined })).map(([q, extra]) =>
    (extra ? { ...q, [extra[0] || 'x']: extra[1] } : q) as Record<string, string>,
  );
}

/** Percent-encodes any string, lone surrogates too (as the UTF-8-style bytes a careless client would send). */
function pct(s: string): string {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const u = s.charCodeAt(i);
    const pair = u >= 0xd800 && u <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    if (pair) {
      out += encodeURIComponent(s.slice(i, i + 2));
      i++;
    } else if (u >= 0xd800 && u <= 0xdfff) {
      out += [0xe0 | (u >> 12), 0x80 | ((u >> 6) & 0x3f), 0x80 | (u & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(s[i] as string);
  }
  return out;
}
const queryText = (q: Record<string, string>) => Object.entries(q).map(([k, val]) => `${pct(k)}=${pct(val)}`).join('&');

// -------------------------------------------------------------------------------------------- requests, checks

/** Already encoded path segments: not UUIDs, bad escapes, encoded NUL and surrogates, traversal, very long. */
const HOSTILE_SEGMENTS = [
  'not-a-uuid',
  '%00',
  `${FAKE_ID}%00`,
  '%ED%A0%80',
  '%C0%80',
  '%FF',
  '%',
  '%25',
  '..',
  '%2e%2e',
  '%2F',
  'x'.repeat(3000),
  FAKE_ID,
  FAKE_ID.toUpperCase(),
  '00000000-0000-0000-0000-000000000000',
  '%20',
  '-1',
  '1e999',
];
/** Header values a real client can send (byte strings without NUL, CR or LF). */
const HOSTILE_HEADER_VALUES = ['', 'not-a-uuid', FAKE_ID, `${FAKE_ID},${FAKE_ID}`, '\u00ff\u00fe', 'x'.repeat(5000)];
const RAW_BODIES = [
  '[]',
  '[{}]',
  'null',
  '0',
  '1e999',
  '"text"',
  'true',
  '{',
  '{"a":',
  '{"a":1}}',
  '\ufeff{}',
  '{"x":"\\u0000"}',
  '{"x":"\\ud800"}',
  '{"\\u0000":1}',
  '{"__proto__":{"polluted":1}}',
  `${'['.repeat(20_000)}${']'.repeat(20_000)}`,
  `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`,
  `{"n":${'9'.repeat(400)}}`,
  `{"s":"${'x'.repeat(200_000)}"}`,
];

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** The input rules refuse this request: anything below 400 is a violation too. */
  refuse?: boolean;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const badText = (s: string) => s.includes('\u0000') || LONE_SURROGATE.test(s);
const isUuidText = (s: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
/** Percent-decoding as the router does it: a run of escapes that is not UTF-8 stays as it was. */
const decoded = (text: string) => {
  const attempt = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return undefined;
    }
  };
  return attempt(text) ?? text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => attempt(run) ?? run);
};

/** Whether the input rules refuse a JSON body text (malformed JSON is refused too). */
function refusedJson(raw: string, objectSchema: boolean): boolean {
  // Decoding the body as UTF-8 drops a byte order mark.
  const text = raw.replace(/^\ufeff/, '');
  if (text.trim() === '') return false;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return true;
  }
  if (objectSchema && (typeof body !== 'object' || body === null || Array.isArray(body))) return true;
  const stack: [unknown, number][] = [[body, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (typeof node === 'string' && badText(node)) return true;
    if (typeof node === 'number' && !Number.isFinite(node)) return true;
    if (typeof node === 'object' && node !== null) {
      if (depth > MAX_JSON_DEPTH) return true;
      for (const [k, val] of Object.entries(node)) {
        if (!Array.isArray(node) && badText(k)) return true;
        stack.push([val, depth + 1]);
      }
    }
  }
  return false;
}

/** Whether the input rules refuse a request to the route: by its path parameters, query values or JSON body. */
function refused(route: AnyRoute, segments: Record<string, string>, query: string, body: string | Uint8Array | undefined): boolean {
  for (const name of route.path.match(/:[A-Za-z]+/g) ?? []) {
    const value = decoded(segments[name.slice(1)] ?? pct(real[name.slice(1)] ?? FAKE_ID));
    if (name === ':id' || name.endsWith('Id') ? !isUuidText(value) : badText(value)) return true;
  }
  if (query.split(/[&=]/).some((part) => decoded(part).includes('\u0000'))) return true;
  const readsJson = route.body !== undefined || route.operation === 'execute_workflow';
  const objectSchema = ['object', 'strict_object', 'loose_object', 'object_with_rest'].includes((route.body as Node | undefined)?.type ?? '');
  if (!readsJson || body === undefined) return false;
  return refusedJson(typeof body === 'string' ? body : new TextDecoder().decode(body), objectSchema);
}

function fillPath(route: AnyRoute, override: Record<string, string> = {}): string {
  return route.path.replace(/:([A-Za-z]+)/g, (_m, name: string) => override[name] ?? pct(real[name] ?? FAKE_ID));
}

type Who = 'owner' | 'member' | 'none' | 'garbage';
function headersFor(route: AnyRoute, who: Who): Record<string, string> {
  const headers: Record<string, string> = {};
  if (route.auth === 'admin') {
    if (who !== 'none') headers['x-admin-token'] = who === 'garbage' ? 'wrong-wrong-wrong' : ADMIN_TOKEN;
  } else if (who === 'owner') headers.authorization = `Bearer ${owner.token}`;
  else if (who === 'member') headers.authorization = `Bearer ${member.token}`;
  else if (who === 'garbage') headers.authorization = 'Bearer \u00ff\u00fe garbage';
  if (route.workspace === 'header' || route.operation === 'execute_workflow') headers['x-workspace-id'] = ws.id;
  return headers;
}

/** The query every request carries: payload-scoped reads name their workspace there. */
const baseQuery = (route: AnyRoute): Record<string, string> =>
  route.workspace === 'payload' && (route.method === 'get' || route.method === 'delete') ? { workspace_id: ws.id } : {};
const takesBody = (route: AnyRoute) => route.method !== 'get';
/** The body of a payload-scoped write names its workspace. */
const withWorkspace = (route: AnyRoute, body: unknown) =>
  route.workspace === 'payload' && takesBody(route) && body && typeof body === 'object' && !Array.isArray(body)
    ? { workspace_id: ws.id, ...body }
    : body;

/** Answers that mean "not configured in this process", not "bad input": a 503 with one of these codes. */
const NOT_CONFIGURED = new Set(['SERVICE_UNAVAILABLE', 'EMBEDDING_NOT_CONFIGURED', 'MODEL_NOT_MULTIMODAL']);

async function send(req: Req): Promise<string | undefined> {
  const res = await h.app.request(req.path, { method: req.method, headers: req.headers, body: req.body });
  const text = await res.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const what = () => `${req.method} ${short(req.path, 160)} body=${short(typeof req.body === 'string' || req.body === undefined ? req.body : new TextDecoder().decode(req.body), 160)} → ${res.status} ${short(text, 200)}`;
  if (res.status >= 500 && !(res.status === 503 && NOT_CONFIGURED.has(body?.code))) return what();
  if (req.refuse && res.status < 400) return `accepted input the rules refuse: ${what()}`;
  // 416 (a Range past the end of a file) is a bodiless HTTP answer by design.
  if (res.status >= 400 && res.status !== 416) {
    const envelope =
      body &&
      typeof body === 'object' &&
      typeof body.error === 'string' &&
      typeof body.code === 'string' &&
      (body.details === undefined || typeof body.details === 'string') &&
      ERROR_STATUS[body.code as keyof typeof ERROR_STATUS] === res.status;
    if (!envelope) return `not the error envelope: ${what()}`;
  }
  return undefined;
}

/** Runs requests one after another (the handlers share one workspace) and returns what broke the invariant. */
async function violations(reqs: Req[]): Promise<string[]> {
  const out: string[] = [];
  for (const r of reqs) {
    const bad = await send(r);
    if (bad) out.push(bad);
  }
  return out;
}

/** Hand-picked hostile requests: each path parameter, the query, the header and the raw body in turn. */
function corpus(route: AnyRoute): Req[] {
  const method = route.method.toUpperCase();
  const okBody = route.body ? toJsonText(withWorkspace(route, {})) : undefined;
  const reqs: Req[] = [];
  /** One request: the route's real path and query but for what is given. */
  const add = (p: { who?: Who; segments?: Record<string, string>; query?: string; headers?: Record<string, string>; body?: string | Uint8Array }) => {
    const segments = p.segments ?? {};
    const query = [queryText(baseQuery(route)), p.query ?? ''].filter(Boolean).join('&');
    const body = 'body' in p ? p.body : okBody;
    reqs.push({
      method,
      path: `${fillPath(route, segments)}${query ? `?${query}` : ''}`,
      headers: { ...headersFor(route, p.who ?? 'owner'), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...p.headers },
      body,
      refuse: refused(route, segments, query, body),
    });
  };
  for (const who of ['owner', 'member', 'none', 'garbage'] as const) add({ who });
  for (const name of route.path.match(/:[A-Za-z]+/g) ?? []) {
    for (const seg of HOSTILE_SEGMENTS) add({ segments: { [name.slice(1)]: seg } });
  }
  for (const query of ['%', 'limit=%ZZ', 'a=%E0%A4%A', 'limit=1&limit=2', 'limit[]=1', `limit=${'9'.repeat(400)}`, 'offset=9007199254740993', '=x&&&', 'x=%00', '%00=x', 'x=%ED%A0%80']) {
    add({ query });
  }
  if (route.workspace === 'header' || route.operation === 'execute_workflow') {
    for (const value of [...HOSTILE_HEADER_VALUES, other.id]) add({ headers: { 'x-workspace-id': value } });
  }
  if (route.operation === 'download_file') {
    for (const range of ['bytes=0-0', 'bytes=-0', 'bytes=99999999999999999999-', 'bytes=5-1', 'bytes=0-1,2-3', 'items=0-1', `bytes=${'9'.repeat(400)}-`]) {
      add({ headers: { range } });
    }
  }
  if (takesBody(route)) {
    const bodies: (string | Uint8Array)[] = [...RAW_BODIES, new Uint8Array([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])];
    if (route.workspace === 'payload') {
      bodies.push(...RAW_BODIES.filter((b) => b.includes('\\u') || b.includes('__proto__')).map((b) => b.replace('{', `{"workspace_id":"${ws.id}",`)));
    }
    if (route.body) {
      const texts = plausibleBodies(route.body as Node).flatMap((p) => mutations(p).map((b) => toJsonText(withWorkspace(route, b))));
      bodies.push(...new Set(texts));
    }
    for (const body of bodies) add({ body });
    const form = '--x\r\nContent-Disposition: form-data; name="file"; filename="a\u0000b"\r\n\r\nhi\r\n--x--\r\n';
    for (const contentType of ['text/plain', 'multipart/form-data; boundary=x', 'multipart/form-data', 'application/x-www-form-urlencoded']) {
      add({ headers: { 'content-type': contentType }, body: form });
    }
  }
  return reqs;
}

/** Multipart bodies with hostile filenames, field names and metadata (the upload routes read no JSON body). */
function multipartCorpus(route: AnyRoute): Req[] {
  const boundary = 'fuzzBoundary';
  const part = (disposition: string, content: string, type = 'text/plain') =>
    `--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: ${type}\r\n\r\n${content}\r\n`;
  const file = part('form-data; name="file"; filename="a.txt"', 'hi');
  // [body, refused by the rules]; a lone surrogate cannot travel in UTF-8 (it arrives as U+FFFD, a valid name).
  const bodies: [string, boolean][] = [
    [part('form-data; name="file"; filename="a\u0000b.txt"', 'hi'), true],
    [part('form-data; name="file"; filename="\ud800.txt"', 'hi'), false],
    [part("form-data; name=\"file\"; filename*=UTF-8''%00%ED%A0%80.txt", 'hi'), false],
    [part('form-data; name="file"; filename=""', 'hi'), false],
    // The multipart parser keeps a filename's last path component.
    [part('form-data; name="file"; filename="../../x"', 'hi'), false],
    [part('form-data; name="file"; filename="a.txt"', 'hi', 'text/\u0000plain'), false],
    [part('form-data; name="metadata"', '{"k":"\\u0000"}') + file, true],
    [part('form-data; name="metadata"', '{"k":"\\ud800"}') + file, true],
    [part('form-data; name="metadata"', '{"\\udc00":1}') + file, true],
    [part('form-data; name="metadata"', '[1,2]') + file, true],
    [part('form-data; name="metadata"', `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`) + file, true],
    [part('form-data; name="metadata"', '1e999') + file, true],
    [part('form-data; name="metadata"', '{"n":1e999}') + file, true],
    [part('form-data; name="\u0000"', 'x') + file, false],
    [part('form-data; name="file"; filename="a.txt"', 'hi', 'x'.repeat(5000)), false],
    [`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nunterminated`, true],
    ['', true],
  ];
  const headers = { ...headersFor(route, 'owner'), 'content-type': `multipart/form-data; boundary=${boundary}` };
  return bodies.map(([body, refuse]) => ({
    method: 'POST',
    path: fillPath(route),
    headers,
    body: new TextEncoder().encode(body.endsWith('unterminated') || body === '' ? body : `${body}--${boundary}--\r\n`),
    refuse,
  }));
}

/** JSON upload bodies with hostile fields (streamed, not read by the route wrapper): [body, refused by the rules]. */
const JSON_UPLOADS: [unknown, boolean][] = [
  [{ filename: 'a\u0000.txt', content: b64('x') }, true],
  [{ filename: '\ud800.txt', content: b64('x') }, true],
  [{ filename: 'a.txt', content: b64('x'), metadata: { k: '\u0000' } }, true],
  [{ filename: 'a.txt', content: b64('x'), metadata: { 'k\ud800': 1 } }, true],
  [{ filename: 'a.txt', content: b64('x'), metadata: { n: rawMarker('1e999') } }, true],
  [{ filename: 'a.txt', content: b64('x'), metadata: nest(300, 1, false) }, true],
  [{ filename: 'a.txt', content: b64('x'), content_type: 'text/plain; x="\u0000"' }, true],
  [{ filename: 'a.txt', content: b64('x'), content_type: 'text/plain\ud800' }, true],
  [{ filename: ['a'], content: b64('x') }, true],
  [{ filename: 'a.txt', content: '\u0000' }, true],
  [{ filename: 'a.txt', content: 12 }, true],
  [[{ filename: 'a.txt', content: b64('x') }], true],
  // Fields the upload does not know are skipped unread, whatever they hold.
  [{ filename: 'a.txt', content: b64('x'), extra: '\u0000' }, false],
];

// The rules, one case each, before the fuzzing below changes (and finally deletes) the fixture.
describe('the fixture', () => {
  test('reaches the handlers: with real ids (and a plausible query) the admin reads what every GET route names', async () => {
    // The picker lists folders of a connected Google Drive, which no test connects; /ws takes a WebSocket upgrade
    // (realtime.test.ts), and answers a plain GET with 400 saying so.
    const notPlainReads = new Set(['/api/v1/drive-sync/picker', '/ws']);
    const missed: string[] = [];
    for (const route of routes.filter((r) => r.method === 'get' && !notPlainReads.has(r.path))) {
      const plausibleQuery = route.query ? (plausible(route.query as Node) as Record<string, string>) : {};
      const query = queryText({ ...plausibleQuery, ...baseQuery(route) });
      const res = await h.app.request(`${fillPath(route)}${query ? `?${query}` : ''}`, { headers: headersFor(route, 'owner') });
      if (res.status >= 300) missed.push(`${route.path} → ${res.status} ${short(await res.text(), 120)}`);
    }
    expect(missed).toEqual([]);
  });
});

describe('the input rules, one case each', () => {
  const patch = (body: string, path = `/api/v1/workspaces/${ws.id}`) =>
    h.call('PATCH', path, { token: owner.token, rawBody: body, headers: { 'content-type': 'application/json' } });

  test('a body that is not an object is refused where the route takes one', async () => {
    for (const body of ['[]', '[{"name":"x"}]', 'null', '3', '"x"', 'true']) {
      const r = await patch(body);
      expect(r.status, body).toBe(400);
      expect(r.body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'the body must be a JSON object' });
    }
    expect((await patch('')).status).toBe(200);
  });

  test('NUL, unpaired surrogates and Infinity are refused, naming the field; a surrogate pair is text', async () => {
    expect((await patch('{"name":"a\\u0000b"}')).body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'name: must not contain the NUL character (\\u0000)' });
    expect((await patch('{"name":"\\ud800"}')).body.details).toMatch(/^name: must not contain an unpaired UTF-16 surrogate/);
    expect((await patch('{"custom_prompt":"x","\\udc00":1}')).body.details).toMatch(/^\(body\): keys must not contain an unpaired/);
    expect((await patch('{"mcp_timeout_ms":1e999}')).body.details).toBe('mcp_timeout_ms: must be a finite number');
    const policy = await h.call('PATCH', `/api/v1/policies/${real.policyId}`, { token: owner.token, workspace: ws.id, body: { condition: { and: [{ n: '\ud800' }] } } });
    expect(policy.body.details).toMatch(/^condition: must not contain an unpaired UTF-16 surrogate .* \(at condition\.and\.0\.n\)$/);
    const pair = await patch(JSON.stringify({ name: 'Fuzz \u{1F4A9}' }));
    expect(pair.status).toBe(200);
    expect(pair.body.name).toBe('Fuzz \u{1F4A9}');
  });

  test(`nesting: ${MAX_JSON_DEPTH} levels are read, one more is refused`, async () => {
    // A workflow's $input is any JSON: only the depth rule applies.
    const execute = (depth: number) =>
      h.call('POST', `/api/v1/workflows/${real.workflowId}/execute`, {
        token: owner.token,
        workspace: ws.id,
        rawBody: `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`,
        headers: { 'content-type': 'application/json' },
      });
    expect((await execute(MAX_JSON_DEPTH)).status).toBe(200);
    const deeper = await execute(MAX_JSON_DEPTH + 1);
    expect(deeper.status).toBe(400);
    expect(deeper.body.details).toMatch(new RegExp(`^a: must not nest deeper than ${MAX_JSON_DEPTH} levels \\(at a(\\.0)+\\)$`));
  });

  test('ids in the path are UUIDs, before anything is looked up; other parameters are text', async () => {
    for (const id of ['not-a-uuid', '%00', `${real.keyId}%00`]) {
      const r = await h.call('DELETE', `/api/v1/api-keys/${id}`, { token: owner.token });
      expect(r.status, id).toBe(404);
      expect(r.body).toMatchObject({ code: 'NOT_FOUND', details: 'path parameter keyId is not a UUID' });
    }
    // Authentication still comes first.
    expect((await h.call('DELETE', '/api/v1/api-keys/not-a-uuid')).status).toBe(401);
    const secret = await h.call('DELETE', `/api/v1/stfs/${real.stfId}/secrets/A%00B`, { token: owner.token, workspace: ws.id });
    expect(secret.body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'path parameter envKey: must not contain the NUL character (\\u0000)' });
    const query = await h.call('GET', '/api/v1/workflows?name=a%00b', { token: owner.token, workspace: ws.id });
    expect(query.body).toMatchObject({ code: 'VALIDATION_ERROR', details: 'query parameter name: must not contain the NUL character (\\u0000)' });
  });
});

describe('database errors that input causes are 4xx (the safety net under validation)', () => {
  const dbError = (code: string) => Object.assign(new Error('from PostgreSQL'), { code, severity: 'ERROR' });
  test.each([
    ['22P05', 400, 'VALIDATION_ERROR'],
    ['22021', 400, 'VALIDATION_ERROR'],
    ['22003', 400, 'VALIDATION_ERROR'],
    ['22P02', 400, 'VALIDATION_ERROR'],
    ['54001', 400, 'VALIDATION_ERROR'],
    ['23505', 409, 'CONFLICT'],
    ['23503', 409, 'CONFLICT'],
  ])('SQLSTATE %s → %i %s', (code, status, name) => {
    const e = inputErrorOf(dbError(code));
    expect(e?.status).toBe(status);
    expect(e?.toBody()).toMatchObject({ code: name, details: expect.stringContaining(`SQLSTATE ${code}`) });
    expect(e?.toBody().details).not.toContain('from PostgreSQL');
  });
  test('other errors stay 500s', () => {
    expect(inputErrorOf(dbError('57014'))).toBeUndefined();
    expect(inputErrorOf(dbError('XX000'))).toBeUndefined();
    expect(inputErrorOf(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBeUndefined();
    expect(inputErrorOf(new TypeError('x'))).toBeUndefined();
  });
});

// Mutations that would end the fixture for later routes (delete the workspace, its members, the key) run last, and
// logout, which revokes the owner's and the member's sessions, after them all.
const endsFixture = (r: AnyRoute) => (r.operation === 'logout' ? 3 : r.operation === 'delete_workspace' ? 2 : r.method === 'delete' ? 1 : 0);
const ordered = [...routes].sort((a, b) => endsFixture(a) - endsFixture(b));

describe.each(ordered.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s', (_name, route) => {
  test('hostile corpus: no 5xx, errors in the envelope, refused input refused', async () => {
    const reqs = corpus(route);
    if (route.operation === 'upload_file' && route.path.endsWith('/multipart')) reqs.push(...multipartCorpus(route));
    else if (route.operation === 'upload_file') {
      for (const [body, refuse] of JSON_UPLOADS) {
        reqs.push({ method: 'POST', path: fillPath(route), headers: { ...headersFor(route, 'owner'), 'content-type': 'application/json' }, body: toJsonText(body), refuse });
      }
    }
    expect(await violations(reqs)).toEqual([]);
  });

  test('generated from the schema: no 5xx, errors in the envelope, refused input refused', async () => {
    // A route without a body schema may still read one (a workflow's $input): it gets any JSON, hostile too.
    const body = route.body
      ? fromSchema(route.body as Node).map((b) => withWorkspace(route, b))
      : takesBody(route)
        ? fc.oneof(fc.constant(undefined), fc.jsonValue({ maxDepth: 3 }), hostileValue)
        : fc.constant(undefined);
    const segments = Object.fromEntries(
      (route.path.match(/:[A-Za-z]+/g) ?? []).map((p) => {
        const name = p.slice(1);
        return [name, fc.oneof({ weight: 4, arbitrary: fc.constant(pct(real[name] ?? FAKE_ID)) }, { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_SEGMENTS) }, { weight: 1, arbitrary: codeUnits.map(pct) })];
      }),
    );
    const who = fc.oneof({ weight: 6, arbitrary: fc.constant<Who>('owner') }, { weight: 2, arbitrary: fc.constant<Who>('member') }, { weight: 1, arbitrary: fc.constantFrom<Who>('none', 'garbage') });
    const input = fc.record({ body, query: queryFromSchema(route.query as Node | undefined), segments: fc.record(segments), who });
    await fc.assert(
      fc.asyncProperty(input, async ({ body: b, query, segments: seg, who: w }) => {
        const text = queryText({ ...baseQuery(route), ...query });
        const path = `${fillPath(route, seg as Record<string, string>)}${text ? `?${text}` : ''}`;
        const headers = { ...headersFor(route, w), ...(b === undefined ? {} : { 'content-type': 'application/json' }) };
        const bodyText = b === undefined ? undefined : toJsonText(b);
        const refuse = refused(route, seg as Record<string, string>, text, bodyText);
        const bad = await send({ method: route.method.toUpperCase(), path, headers, refuse, ...(bodyText === undefined ? {} : { body: bodyText }) });
        expect(bad).toBeUndefined();
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });
});
