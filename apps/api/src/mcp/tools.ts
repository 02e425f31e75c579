import { OPERATIONS, operationHints } from '@wds/audit';
import type * as v from 'valibot';
import { jsonSchemaOf } from '../http/openapi.js';
import { type AnyRoute, pathParamNames } from '../http/route.js';
import { describeArguments, describeTool } from './descriptions.js';

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; required?: string[] };

/** A tool argument's JSON Schema: the strict conversion of the OpenAPI document (a part it cannot state fails). */
const jsonSchema = (s: v.GenericSchema, where: string) => jsonSchemaOf(s, where) as JsonSchema;

/** How a route's input is spread over one tool's arguments. */
export interface ToolShape {
  name: string;
  route: AnyRoute;
  /** What the tool does and when to use it, for a model (descriptions.ts); no HTTP. */
  description: string;
  /** The REST route of the same operation (`POST /api/v1/…`): the tool's `_meta["wds/rest"]` and docs/mcp.md. */
  rest: string;
  inputSchema: JsonSchema & { type: 'object' };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
  /** Path parameters taken from the arguments (the workspace's `:id` comes from the connection instead). */
  params: string[];
  /** Arguments handed to the handler as request headers. */
  headers: string[];
  /** Query parameters (sent as strings, like a query string). */
  query: string[];
  /** The argument holding a body that is not a JSON object; undefined when the body's fields are arguments. */
  bodyName: string | undefined;
  /** Whether the workspace is named as `workspace_id` of the payload (filled in from the connection). */
  payloadWorkspace: boolean;
}

/** Why a route is not a tool; undefined when it is one. */
export function exclusionOf(route: AnyRoute): string | undefined {
  if (route.mcp && 'exclude' in route.mcp) return route.mcp.exclude;
  if (route.auth === 'admin') return 'the admin interface (X-Admin-Token) is for operators, not for agents acting as a user';
  if (route.auth === 'none') return 'no credential: an MCP connection is already authenticated';
  return undefined;
}

/** Routes under /workspaces/:id take that id from the connection's workspace (header-scoped ones ignore it). */
const workspaceInPath = (route: AnyRoute) => route.workspace !== undefined && route.path.startsWith('/api/v1/workspaces/:id');

/**
 * A query parameter is a string in a URL; as a tool argument it is the typed value (integer, boolean) or, as agents
 * also send them, its string form (which the route's own schema then checks).
 */
function widenQuery(schema: JsonSchema): JsonSchema {
  const { default: def, description, ...typed } = schema;
  const text =
    schema.type === 'integer' ? { type: 'string', pattern: '^-?\\d+$' } : schema.type === 'boolean' ? { type: 'string', enum: ['true', 'false', '1', '0'] } : undefined;
  if (!text) return schema;
  return { anyOf: [typed, text], ...(def !== undefined ? { default: def } : {}), ...(description !== undefined ? { description } : {}) };
}

/** The tool of a route: its name is the operation's; its input schema joins path, query, header and body inputs. */
export function toolOf(route: AnyRoute): ToolShape {
  const properties: Record<string, JsonSchema> = {};
  const required = new Set<string>();
  const add = (name: string, schema: JsonSchema, isRequired: boolean, from: string) => {
    if (properties[name]) throw new Error(`${route.operation}: argument ${name} of the ${from} is defined twice`);
    properties[name] = schema;
    if (isRequired) required.add(name);
  };
  const payloadWorkspace = route.workspace === 'payload';
  const params = pathParamNames(route.path).filter((p) => !(p === 'id' && workspaceInPath(route)));
  for (const p of params) add(p, { type: 'string', description: `the ${p} of the path` }, true, 'path');

  const headerSchemas = route.mcp && 'headers' in route.mcp ? (route.mcp.headers ?? {}) : {};
  for (const [name, schema] of Object.entries(headerSchemas)) add(name, jsonSchema(schema, `${route.operation} argument ${name}`), false, 'headers');

  const query: string[] = [];
  if (route.query) {
    const q = jsonSchema(route.query, `${route.operation} query`);
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      if (payloadWorkspace && name === 'workspace_id') continue;
      query.push(name);
      add(name, widenQuery(schema), q.required?.includes(name) ?? false, 'query');
    }
  }

  let bodyName: string | undefined;
  if (route.body) {
    const b = jsonSchema(route.body, `${route.operation} body`);
    if (b.type === 'object' && b.properties) {
      for (const [name, schema] of Object.entries(b.properties)) {
        if (payloadWorkspace && name === 'workspace_id') continue;
        add(name, schema, b.required?.includes(name) ?? false, 'body');
      }
    } else {
      bodyName = (route.mcp && 'bodyName' in route.mcp ? route.mcp.bodyName : undefined) ?? 'body';
      add(bodyName, b, false, 'body');
    }
  }

  const hints = operationHints(route.operation);
  const method = route.method.toUpperCase();
  return {
    name: route.operation,
    route,
    description: describeTool(route.operation, route.summary),
    rest: `${method} ${route.path}`,
    inputSchema: describeArguments({ type: 'object', properties, ...(required.size ? { required: [...required] } : {}) }, params) as ToolShape['inputSchema'],
    annotations: {
      title: route.operation.replace(/_/g, ' '),
      readOnlyHint: hints.readOnly,
      destructiveHint: hints.destructive,
      idempotentHint: hints.readOnly || method === 'PUT' || method === 'DELETE',
      openWorldHint: hints.openWorld,
    },
    params,
    headers: Object.keys(headerSchemas),
    query,
    bodyName,
    payloadWorkspace,
  };
}

const toolsByRoute = new WeakMap<AnyRoute, ToolShape>();

/** A route's tool, built once per route (as the OpenAPI document is: openApiOf); shared, so never changed. */
function cachedToolOf(route: AnyRoute): ToolShape {
  let tool = toolsByRoute.get(route);
  if (!tool) {
    tool = toolOf(route);
    toolsByRoute.set(route, tool);
  }
  return tool;
}

/** The tools of a route list: every route a user can call, except those excluded with a reason. */
export function toolsOf(routes: readonly AnyRoute[]): Map<string, ToolShape> {
  const tools = new Map<string, ToolShape>();
  for (const route of routes) {
    if (exclusionOf(route) !== undefined) continue;
    if (tools.has(route.operation)) throw new Error(`two routes are the tool ${route.operation}: exclude one`);
    if (!(route.operation in OPERATIONS)) throw new Error(`unknown operation ${route.operation}`);
    tools.set(route.operation, cachedToolOf(route));
  }
  return tools;
}

/** A tool call's arguments as the route's inputs: path parameters, headers, query strings and the body. */
export function splitArguments(tool: ToolShape, args: Record<string, unknown>, workspaceId: string | undefined) {
  const params: Record<string, string> = {};
  const headers: Record<string, string> = {};
  const query: Record<string, string> = {};
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) {
    if (tool.params.includes(name)) params[name] = typeof value === 'string' ? value : String(value);
    else if (tool.headers.includes(name)) {
      if (value !== undefined && value !== null) headers[name] = String(value);
    } else if (tool.query.includes(name)) {
      if (value !== undefined && value !== null) query[name] = typeof value === 'string' ? value : JSON.stringify(value);
    } else if (name !== tool.bodyName) body[name] = value;
  }
  if (workspaceId !== undefined && workspaceInPath(tool.route)) params.id = workspaceId;
  const fromQuery = tool.route.method === 'get' || tool.route.method === 'delete';
  if (tool.payloadWorkspace && workspaceId !== undefined) {
    if (fromQuery) query.workspace_id = workspaceId;
    else body.workspace_id = workspaceId;
  }
  return { params, headers, query, body: tool.bodyName !== undefined ? (args[tool.bodyName] ?? null) : body };
}
