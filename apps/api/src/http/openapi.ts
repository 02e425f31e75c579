import { OPERATIONS } from '@wds/audit';
import { toJsonSchema } from '@valibot/to-json-schema';
import type * as v from 'valibot';
import type { AnyRoute } from './route.js';

const jsonSchema = (s: v.GenericSchema) => toJsonSchema(s, { errorMode: 'ignore' }) as Record<string, unknown>;

const ERROR = {
  type: 'object',
  required: ['error', 'code'],
  properties: { error: { type: 'string' }, code: { type: 'string' }, details: { type: 'string' } },
};

/** OpenAPI 3.1, generated from the same route list and valibot schemas that validate requests. */
export function buildOpenApi(routes: readonly AnyRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const parameters: unknown[] = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (r.workspace) {
      parameters.push({
        name: 'X-Workspace-ID',
        in: 'header',
        required: r.workspace === 'header',
        schema: { type: 'string', format: 'uuid' },
      });
    }
    if (r.query) {
      const q = jsonSchema(r.query) as { properties?: Record<string, unknown>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
      }
    }
    const security =
      r.auth === 'none'
        ? []
        : r.auth === 'admin'
          ? [{ adminToken: [] }]
          : r.auth === 'optional'
            ? [{}, { bearer: [] }]
            : [{ bearer: [] }];
    paths[path] ??= {};
    paths[path][r.method] = {
      operationId: r.operation,
      summary: r.summary,
      tags: [OPERATIONS[r.operation].resource],
      security,
      parameters,
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body) } } } } : {}),
      responses: {
        [String(r.status ?? 200)]: { description: 'Success' },
        default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Workspace Data and Automation Service', version: '1.0.0' },
    paths,
    components: {
      schemas: { Error: ERROR },
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'ses_ session token, svc_ API key, or JWT' },
        adminToken: { type: 'apiKey', in: 'header', name: 'X-Admin-Token' },
      },
    },
  };
}
