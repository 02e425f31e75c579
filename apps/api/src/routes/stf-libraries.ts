import { notFound } from '@wds/errors';
import { bundledLibraryTypes, listBundledLibraries } from '@wds/stf-runtime';
import { defineRoute } from '../http/route.js';

/**
 * The libraries STF code of the javascript runtime may import by package name (DECISIONS §6), and their type
 * declarations for editors. Any signed-in user; not workspace-scoped (the libraries are the same everywhere).
 */
export const stfLibraryRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/stf-libraries',
    operation: 'list_stf_libraries',
    summary: 'Libraries STF code can import by name: [{ name, version, description }]',
    auth: 'user',
    handler: async () => listBundledLibraries(),
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/stf-libraries/:name/types',
    operation: 'get_stf_library_types',
    summary: 'TypeScript declarations (.d.ts, text/plain) of a library: `declare module "<name>"` blocks',
    auth: 'user',
    handler: async ({ params }) => {
      const types = bundledLibraryTypes(params.name ?? '');
      if (types === undefined) throw notFound('STF library');
      return new Response(types, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    },
  }),
];
