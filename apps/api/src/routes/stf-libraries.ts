import { notFound } from '@wds/errors';
import { bundledLibraryTypes, listBundledLibraries } from '@wds/stf-runtime';
import * as v from 'valibot';
import { defineRoute } from '../http/route.js';
import { StfLibrary } from '../http/views/index.js';

/**
 * The libraries STF code of the javascript runtime may import by package name (docs/stfs.md#bundled-libraries), and
 * their type declarations for editors. Any signed-in user; not workspace-scoped (the libraries are the same
 * everywhere). Each library has two names, its own (`docx`) and the origin platform's (`@d6e-ai/docx`): the list gives
 * the first as `name` and the second in `aliases`, and the types are served for either: the scoped name as it is
 * (/api/v1/stf-libraries/@d6e-ai/docx/types) or URL-encoded (/api/v1/stf-libraries/%40d6e-ai%2Fdocx/types).
 */
const typesResponse = (name: string): Response => {
  const types = bundledLibraryTypes(name);
  if (types === undefined) throw notFound('STF library');
  return new Response(types, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
};

export const stfLibraryRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/stf-libraries',
    operation: 'list_stf_libraries',
    summary:
      'Libraries STF code can import by name: [{ name, aliases, version, description, license }]; each is importable as `name` and as its aliases (`@d6e-ai/<name>`)',
    auth: 'user',
    response: v.array(StfLibrary),
    handler: async () => listBundledLibraries(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/stf-libraries/:name/types',
    operation: 'get_stf_library_types',
    summary:
      'TypeScript declarations (.d.ts, text/plain) of a library, by either name (`docx`, or `@d6e-ai/docx` URL-encoded): `declare module "<name>"` blocks',
    auth: 'user',
    openapi: { responses: { '200': { description: 'The declarations', content: { 'text/plain': { schema: { type: 'string' } } } } } },
    handler: async ({ params }) => typesResponse(params.name),
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/stf-libraries/@d6e-ai/:name/types',
    operation: 'get_stf_library_types',
    summary: 'TypeScript declarations of a library by its origin-platform name written as it is (`@d6e-ai/docx`): `declare module "@d6e-ai/<name>"` blocks',
    auth: 'user',
    mcp: { exclude: 'the unencoded spelling of get_stf_library_types for the scoped name, which MCP takes as an argument' },
    openapi: {
      operationId: 'get_stf_library_types_scoped',
      responses: { '200': { description: 'The declarations', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
    handler: async ({ params }) => typesResponse(`@d6e-ai/${params.name}`),
  }),
];
