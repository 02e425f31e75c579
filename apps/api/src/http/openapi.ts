import { OPERATIONS } from '@wds/audit';
import { ERROR_STATUS, type ErrorCode } from '@wds/errors';
import { toJsonSchema } from '@valibot/to-json-schema';
import { freezeDeep } from '@wds/cache';
import type * as v from 'valibot';
import { isIdParam } from './input.js';
import type { AnyRoute } from './route.js';
import { type JsonSchema, statedJsonSchema } from './schemas.js';
import { VIEWS } from './views/index.js';

export type { JsonSchema };

/** A request header parameter of the OpenAPI document. */
export interface HeaderParameter {
  name: string;
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

/**
 * What a route tells the OpenAPI document beyond its validation schemas (RouteDef.openapi): what the handler reads or
 * answers itself (a streamed upload, a download, a header).
 */
export interface OpenApiExtras {
  /**
   * The operationId, when the route's operation name (shared with audit and MCP) is shared by another route: the
   * document's operationIds are unique.
   */
  operationId?: string;
  /** A request body the handler reads itself (the route declares no `body` schema): content by media type. */
  requestBody?: { description?: string; required?: boolean; content: Record<string, JsonSchema> };
  /** Request headers the handler reads (X-Workspace-ID and the credentials are declared from the route). */
  headers?: HeaderParameter[];
  /** Responses by status: the success answer's content and headers (replacing the generic one), 206, 416, … */
  responses?: Record<string, JsonSchema>;
  /** Error statuses beyond the generic ones of the route (415, 422, …): answered with the Error body. */
  errors?: number[];
}

/** Raised when a validation schema has a part JSON Schema cannot state and no `withJsonSchema` override. */
export class OpenApiSchemaError extends Error {
  override name = 'OpenApiSchemaError';
}

/**
 * Actions that normalise a value without constraining what is accepted (trim, case): leaving them out of a request's
 * JSON Schema keeps every constraint.
 */
const NORMALISING_ACTIONS = ['trim', 'trim_start', 'trim_end', 'to_upper_case', 'to_lower_case', 'normalize'];

/** Transformations after which a pipe's input conversion stops (`typeMode: 'input'`): the value changes type. */
const TYPE_CHANGES = new Set([
  'find_item', 'parse_json', 'raw_transform', 'reduce_items', 'stringify_json',
  'to_bigint', 'to_boolean', 'to_date', 'to_number', 'to_string', 'transform',
]);

type Walked = { kind?: string; type?: string; [key: string]: unknown; pipe?: Walked[]; wrapped?: Walked; item?: Walked; key?: Walked; value?: Walked; rest?: Walked; entries?: Record<string, Walked>; options?: Walked[]; items?: Walked[] };

/**
 * The input conversion stops a pipe at its first change of type: a constraint after it (`minValue` after `to_number`)
 * would be left out without a word. Refused here unless the schema (or a wrapper of it) states its JSON Schema.
 */
function refuseConstraintsAfterTypeChange(schema: Walked, where: string, seen = new Set<Walked>()): void {
  if (seen.has(schema) || statedJsonSchema(schema as object)) return;
  seen.add(schema);
  const pipe = schema.pipe ?? [];
  const change = pipe.findIndex((item) => item.kind === 'transformation' && TYPE_CHANGES.has(item.type ?? ''));
  if (change !== -1) {
    const cut = pipe.slice(change + 1).find((item) => item.kind === 'validation' || item.kind === 'schema');
    if (cut) throw new OpenApiSchemaError(`${where}: the "${cut.type}" after "${pipe[change]?.type}" cannot be stated in the input's JSON Schema (state it with withJsonSchema)`);
  }
  const children = [
    ...pipe.slice(1).filter((item) => item.kind === 'schema'),
    ...[schema.wrapped, schema.item, schema.key, schema.value, schema.rest].filter((c): c is Walked => c !== undefined && typeof c === 'object'),
    ...Object.values(schema.entries ?? {}),
    ...(schema.options ?? []),
    ...(schema.items ?? []),
  ];
  for (const child of children) if (child && typeof child === 'object' && 'kind' in child) refuseConstraintsAfterTypeChange(child, where, seen);
}

/** The JSON Schema stated for a schema (a copy), built from its parts' conversions when it is a function. */
function stated(schema: object, where: string): JsonSchema | undefined {
  const json = statedJsonSchema(schema);
  if (json === undefined) return undefined;
  return typeof json === 'function' ? json((s) => jsonSchemaOf(s, where)) : structuredClone(json);
}

const CHILD_KEYS = ['wrapped', 'item', 'key', 'value', 'rest'] as const;

/**
 * The schema with each part that states its JSON Schema replaced by a leaf standing for it. The converter asks for
 * overrides of leaves and containers, never of a pipe (it converts the pipe's items instead), and converts a
 * container's parts before asking about it: a leaf is the one place a stated schema is always honoured. Parts with
 * nothing stated below them are kept as they are.
 */
function withStatedLeaves(schema: Walked, placeholders: WeakMap<object, Walked>, named: ReadonlySet<object>, seen = new Map<Walked, Walked>()): Walked {
  // A named schema stays itself, so the converter refers to it ($ref) instead of copying it in.
  if (named.has(schema)) return schema;
  if (statedJsonSchema(schema as object)) {
    // An optional part stays optional (an object's `required` is read from its parts' types).
    const optional = schema.type === 'optional' || schema.type === 'exact_optional' || schema.type === 'nullish';
    const leaf: Walked = optional ? { kind: 'schema', type: schema.type, wrapped: { kind: 'schema', type: 'unknown' } } : { kind: 'schema', type: 'custom' };
    placeholders.set(leaf, schema);
    return leaf;
  }
  const done = seen.get(schema);
  if (done) return done;
  seen.set(schema, schema);
  const copy: Walked & Record<string, unknown> = { ...schema };
  let changed = false;
  const sub = (child: Walked) => {
    const replaced = child && typeof child === 'object' && 'kind' in child ? withStatedLeaves(child, placeholders, named, seen) : child;
    if (replaced !== child) changed = true;
    return replaced;
  };
  for (const key of CHILD_KEYS) if (schema[key]) copy[key] = sub(schema[key] as Walked);
  if (schema.entries) copy.entries = Object.fromEntries(Object.entries(schema.entries).map(([k, c]) => [k, sub(c)]));
  if (schema.options) copy.options = schema.options.map(sub);
  if (schema.items) copy.items = schema.items.map(sub);
  if (schema.pipe) copy.pipe = schema.pipe.map((item, i) => (i > 0 && item.kind === 'schema' ? sub(item) : item));
  // The base of a pipe is the schema itself (without its pipe): its parts are the ones just replaced.
  if (schema.pipe && changed) {
    const { pipe: _pipe, ...base } = copy;
    (copy.pipe as Walked[])[0] = base;
  }
  const result = changed ? copy : schema;
  seen.set(schema, result);
  return result;
}

/**
 * The JSON Schema of what a client sends (`typeMode: 'input'`: a pipe is described up to its first change of type,
 * e.g. `to_number`), converted strictly: any schema or action JSON Schema cannot state throws, unless it states its
 * own with `withJsonSchema` (schemas.ts) — nothing is dropped silently.
 */
export function jsonSchemaOf(schema: v.GenericSchema, where = 'schema', definitions?: Record<string, v.GenericSchema>): JsonSchema {
  refuseConstraintsAfterTypeChange(schema as unknown as Walked, where);
  const placeholders = new WeakMap<object, Walked>();
  const prepared = withStatedLeaves(schema as unknown as Walked, placeholders, new Set(Object.values(definitions ?? {}))) as unknown as v.GenericSchema;
  let converted: JsonSchema;
  try {
    converted = toJsonSchema(prepared, {
      target: 'draft-2020-12',
      typeMode: 'input',
      errorMode: 'throw',
      // Named schemas (response views) are referred to as components of the document.
      ...(definitions ? { definitions, overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}` } : {}),
      ignoreActions: NORMALISING_ACTIONS,
      overrideSchema: ({ valibotSchema }) => {
        // A stand-in leaf, or a schema met as it is (the base of a pipe).
        return stated((placeholders.get(valibotSchema) as object | undefined) ?? valibotSchema, where);
      },
      overrideAction: ({ valibotAction, jsonSchema }) => {
        const stated = statedJsonSchema(valibotAction);
        if (!stated) return undefined;
        if (typeof stated === 'function') throw new OpenApiSchemaError(`${where}: an action states plain JSON Schema keywords`);
        const description = [jsonSchema.description, stated.description].filter(Boolean).join('; ');
        return { ...jsonSchema, ...structuredClone(stated), ...(description ? { description } : {}) };
      },
    }) as JsonSchema;
  } catch (e) {
    throw new OpenApiSchemaError(`${where}: ${(e as Error).message} (state its JSON Schema with withJsonSchema)`);
  }
  const { $schema: _draft, $defs: _defs, ...rest } = converted;
  return rest;
}

/** The named views (views.ts) as components: each converted once, referring to the others by $ref. */
function viewComponents(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(VIEWS)) {
    const others = Object.fromEntries(Object.entries(VIEWS).filter(([n]) => n !== name));
    out[name] = jsonSchemaOf(schema, `view ${name}`, others);
  }
  return out;
}

/**
 * The success answer of a route: its declared `response` as the JSON body (the named views referred to), or only a
 * description when it declares none.
 */
function successOf(r: AnyRoute): JsonSchema {
  if (!r.response || r.status === 204) return { description: 'Success' };
  const schema = jsonSchemaOf(r.response, `${r.method.toUpperCase()} ${r.path} response`, VIEWS);
  return { description: 'Success', content: { 'application/json': { schema } } };
}

/** The error statuses of the closed code set (@wds/errors), each with its codes. */
const CODES_BY_STATUS = new Map<number, ErrorCode[]>();
for (const [code, status] of Object.entries(ERROR_STATUS) as [ErrorCode, number][]) {
  CODES_BY_STATUS.set(status, [...(CODES_BY_STATUS.get(status) ?? []), code]);
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error', 'code'],
  properties: {
    error: { type: 'string', description: 'What went wrong, for people' },
    code: { type: 'string', enum: Object.keys(ERROR_STATUS), description: 'The closed set of error codes (@wds/errors)' },
    details: { type: 'string', description: 'More about it, when there is more' },
  },
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed',
  409: 'Conflict',
  413: 'Payload too large',
  415: 'Unsupported media type',
  416: 'Range not satisfiable',
  422: 'Runtime error',
  429: 'Too many requests',
  500: 'Internal server error',
  502: 'Upstream error',
  503: 'Service unavailable',
  504: 'Timeout',
};

const errorResponseName = (status: number) => `Error${status}`;

/** One reusable response per error status of the code set: the Error body, its `code` one of that status's codes. */
function errorResponses(): Record<string, JsonSchema> {
  const out: Record<string, JsonSchema> = {};
  for (const [status, codes] of CODES_BY_STATUS) {
    out[errorResponseName(status)] = {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${codes.join(', ')}`,
      content: {
        'application/json': {
          schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { properties: { code: { enum: codes } } }] },
        },
      },
    };
  }
  out.Error = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  return out;
}

const errorRef = (status: number) => {
  if (!CODES_BY_STATUS.has(status)) throw new Error(`no error code answers with status ${status}`);
  return { $ref: `#/components/responses/${errorResponseName(status)}` };
};

/**
 * The error statuses any call of a route can meet: 400 (input), 429 and 503 for all; 401/403 with a credential; 404
 * for a path naming something; 409 for mutations (a uniqueness or reference conflict); 413 with a body.
 */
function genericErrors(r: AnyRoute, hasBody: boolean): number[] {
  const statuses = [400, 429, 503];
  if (r.auth !== 'none') statuses.push(401, 403);
  if (r.path.includes(':') || r.workspace) statuses.push(404);
  if (OPERATIONS[r.operation].mutates) statuses.push(409);
  if (hasBody) statuses.push(413);
  return statuses;
}

/**
 * The security of a route's `auth`: `user` any Bearer credential (session token, API key, JWT), `session` a session
 * token only, `login` a session token or an unscoped JWT, `optional` anonymous or Bearer, `admin` the X-Admin-Token,
 * `none` anyone (the OAuth token exchange).
 */
function securityOf(r: AnyRoute): JsonSchema[] {
  switch (r.auth) {
    case 'none':
      return [];
    case 'admin':
      return [{ adminToken: [] }];
    case 'optional':
      return [{}, { bearer: [] }];
    case 'session':
      return [{ session: [] }];
    case 'login':
      return [{ login: [] }];
    default:
      return [{ bearer: [] }];
  }
}

const AUTH_NOTE: Record<AnyRoute['auth'], string> = {
  none: 'No credential.',
  user: 'Credential: a Bearer token: a session token, an API key or a JWT.',
  session: 'Credential: a session token only (API keys and scoped tokens are refused with 403).',
  login: "Credential: a person's interactive login, a session token or a JWT without a workspace_id claim (API keys and scoped JWTs are refused with 403).",
  optional: 'Credential: optional; when sent it must be valid.',
  admin: 'Credential: X-Admin-Token (the admin interface).',
};

const WORKSPACE_HEADER = 'X-Workspace-ID';

/** Whether the route's handler reads its workspace from X-Workspace-ID (declared, or MCP's `workspace` flag). */
const readsWorkspaceHeader = (r: AnyRoute) =>
  r.workspace === 'header' || (r.workspace === undefined && r.mcp !== undefined && 'workspace' in r.mcp && r.mcp.workspace === true);

const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

function parametersOf(r: AnyRoute): JsonSchema[] {
  const parameters: JsonSchema[] = [...r.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => {
    const name = m[1] as string;
    const ignored = name === 'id' && r.workspace === 'header';
    return {
      name,
      in: 'path',
      required: true,
      schema: isIdParam(name) ? { type: 'string', format: 'uuid' } : { type: 'string' },
      ...(ignored ? { description: `Not read: the workspace is the one of ${WORKSPACE_HEADER}` } : {}),
    };
  });
  if (readsWorkspaceHeader(r)) {
    parameters.push({
      name: WORKSPACE_HEADER,
      in: 'header',
      required: true,
      description: 'The workspace of the call',
      schema: { type: 'string', format: 'uuid' },
    });
  } else if (r.workspace === 'path') {
    parameters.push({
      name: WORKSPACE_HEADER,
      in: 'header',
      required: false,
      description: 'When sent, must be the workspace of the path',
      schema: { type: 'string', format: 'uuid' },
    });
  }
  for (const h of r.openapi?.headers ?? []) parameters.push({ in: 'header', required: false, ...h });
  if (r.query) {
    const q = jsonSchemaOf(r.query, `${r.method.toUpperCase()} ${r.path} query`) as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
    }
  }
  return parameters;
}

function requestBodyOf(r: AnyRoute): JsonSchema | undefined {
  if (r.openapi?.requestBody) {
    const { content, required = true, description } = r.openapi.requestBody;
    return { required, ...(description ? { description } : {}), content };
  }
  if (!r.body) return undefined;
  const schema = jsonSchemaOf(r.body, `${r.method.toUpperCase()} ${r.path} body`);
  // A body that is any JSON value (a workflow's $input) may be empty: it then reads as null.
  const anyValue = schema.type === undefined && schema.anyOf === undefined && schema.$ref === undefined;
  return {
    required: !anyValue,
    ...(anyValue ? { description: 'Any JSON value; an empty body reads as null' } : {}),
    content: { 'application/json': { schema } },
  };
}

const json = (schema: JsonSchema) => ({ 'application/json': { schema } });

/** Paths outside the operations: health, readiness, this document and its reference page. */
function servicePaths(): Record<string, Record<string, unknown>> {
  const status = { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } };
  return {
    '/healthz': {
      get: {
        operationId: 'healthz',
        summary: 'Liveness: the process answers (no credential, no rate limit)',
        tags: ['service'],
        security: [],
        responses: { '200': { description: 'Alive', content: json(status) } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readyz',
        summary: 'Readiness: the service database answers within 2 s (no credential, no rate limit)',
        tags: ['service'],
        security: [],
        responses: { '200': { description: 'Ready', content: json(status) }, '503': errorRef(503) },
      },
    },
    '/api/v1/openapi.json': {
      get: {
        operationId: 'get_openapi_document',
        summary: 'This document (OpenAPI 3.1)',
        tags: ['service'],
        security: [],
        responses: { '200': { description: 'The OpenAPI document', content: json({ type: 'object', additionalProperties: {} }) }, '429': errorRef(429) },
      },
    },
    '/api/v1/docs': {
      get: {
        operationId: 'get_api_reference',
        summary: 'The API reference page (Swagger UI, served locally) rendered from this document',
        tags: ['service'],
        security: [],
        responses: {
          '200': { description: 'HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
          '429': errorRef(429),
        },
      },
    },
  };
}

const documents = new WeakMap<readonly AnyRoute[], ReturnType<typeof buildOpenApi>>();

/**
 * The document of a route list, built once per list: the route table is a module constant, so every app of a process
 * (and every test file of a worker) shares one, and converting its schemas costs a few CPU-seconds. Read-only.
 */
export function openApiOf(routes: readonly AnyRoute[]): ReturnType<typeof buildOpenApi> {
  let document = documents.get(routes);
  if (!document) {
    document = freezeDeep(buildOpenApi(routes));
    documents.set(routes, document);
  }
  return document;
}

/** OpenAPI 3.1, generated from the same route list and valibot schemas that validate requests. */
export function buildOpenApi(routes: readonly AnyRoute[]) {
  const paths: Record<string, Record<string, unknown>> = servicePaths();
  const operationIds = new Set<string>(Object.values(paths).flatMap((p) => Object.values(p).map((o) => (o as { operationId: string }).operationId)));
  for (const r of routes) {
    const path = openApiPath(r.path);
    const operationId = r.openapi?.operationId ?? r.operation;
    if (operationIds.has(operationId)) {
      throw new Error(`${r.method.toUpperCase()} ${r.path}: operationId ${operationId} is taken (set openapi.operationId)`);
    }
    operationIds.add(operationId);
    const requestBody = requestBodyOf(r);
    const responses: Record<string, unknown> = {
      [String(r.status ?? 200)]: successOf(r),
      ...r.openapi?.responses,
    };
    for (const status of [...new Set([...genericErrors(r, requestBody !== undefined), ...(r.openapi?.errors ?? [])])].sort((a, b) => a - b)) {
      responses[String(status)] ??= errorRef(status);
    }
    responses.default = { $ref: '#/components/responses/Error' };
    paths[path] ??= {};
    paths[path][r.method] = {
      operationId,
      summary: r.summary,
      description: `${r.summary}\n\n${AUTH_NOTE[r.auth]}${operationId !== r.operation ? ` Operation (audit, MCP): \`${r.operation}\`.` : ''}`,
      tags: [OPERATIONS[r.operation].resource],
      security: securityOf(r),
      parameters: parametersOf(r),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
  }
  // Only the error responses some operation refers to (a status no operation answers is no component).
  const used = new Set([...JSON.stringify(paths).matchAll(/#\/components\/responses\/([A-Za-z0-9]+)/g)].map((m) => m[1]));
  const responses = Object.fromEntries(Object.entries(errorResponses()).filter(([name]) => used.has(name)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Workspace Data and Automation Service',
      version: '1.0.0',
      description: 'Generated from the route declarations and the valibot schemas that validate requests. Reference page: /api/v1/docs.',
    },
    servers: [{ url: '/', description: 'This server' }],
    paths,
    components: {
      schemas: { Error: ERROR_SCHEMA, ...viewComponents() },
      responses,
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Any credential of a user: a session token (ses_…), an API key (svc_…; possibly scoped to one workspace) or a JWT of the authentication server (POST /api/v1/auth/token exchanges an OAuth code or refresh token for one)',
        },
        session: {
          type: 'http',
          scheme: 'bearer',
          description: 'A session token (ses_…) only: API keys and scoped tokens are refused (403) on these operations',
        },
        login: {
          type: 'http',
          scheme: 'bearer',
          description:
            "A person's interactive login: a session token (ses_…) or a JWT of the authentication server without a workspace_id claim; API keys and scoped JWTs are refused (403) on these operations",
        },
        adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Token', description: 'The operator token (ADMIN_TOKEN) of the admin interface' },
      },
    },
  };
}
