import { describe, expect, test } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const NAMES = ['pdf-lib', 'date-fns', 'crypto-js', 'docx', 'fontkit', 'pptxgenjs', 'xlsx', 'mplus-1p-regular'];

describe('GET /stf-libraries', () => {
  test('lists the bundled libraries to any signed-in user, without a workspace', async ({ h, owner }) => {
    const r = await h.call('GET', '/api/v1/stf-libraries', { token: owner.token });
    expect(r.status).toBe(200);
    // Each library once, by its bare name; the origin platform's name (@d6e-ai/<name>) is its alias.
    expect(r.body.map((l: any) => l.name)).toEqual(NAMES);
    for (const lib of r.body) {
      expect(Object.keys(lib).sort()).toEqual(['aliases', 'description', 'license', 'name', 'version']);
      expect(lib.aliases).toEqual([`@d6e-ai/${lib.name}`]);
      expect(lib.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(lib.description).not.toBe('');
      expect(lib.license).toMatch(/^(?:MIT|Apache-2\.0|OFL-1\.1)$/);
    }
    // An API key is a user credential too.
    const k = await h.call('POST', '/api/v1/api-keys', { token: owner.token, body: { name: 'editor' } });
    expect((await h.call('GET', '/api/v1/stf-libraries', { token: k.body.key })).body).toEqual(r.body);
  });

  test('needs a valid token', async ({ h }) => {
    for (const path of ['/api/v1/stf-libraries', '/api/v1/stf-libraries/pdf-lib/types']) {
      const r = await h.call('GET', path);
      expect(r.status, path).toBe(401);
      expect(r.body, path).toMatchObject({ code: 'UNAUTHORIZED' });
      expect((await h.call('GET', path, { token: 'ses_doesnotexist' })).status, path).toBe(401);
    }
  });
});

describe('GET /stf-libraries/{name}/types', () => {
  test('serves the .d.ts text of each library as text/plain', async ({ h, owner }) => {
    const expected: Record<string, RegExp> = {
      'pdf-lib': /class PDFDocument\b/,
      'date-fns': /export function format\b/,
      'crypto-js': /export import SHA256 = CryptoJS\.SHA256;/,
    };
    for (const [name, pattern] of Object.entries(expected)) {
      const r = await h.call('GET', `/api/v1/stf-libraries/${name}/types`, { token: owner.token });
      expect(r.status, name).toBe(200);
      expect(r.headers.get('content-type'), name).toBe('text/plain; charset=utf-8');
      expect(typeof r.body, name).toBe('string');
      expect(r.body, name).toContain(`declare module "${name}" {`);
      expect(r.body, name).toMatch(pattern);
    }
  });

  test('serves every library by both names; the scoped name URL-encoded', async ({ h, owner }) => {
    for (const name of NAMES) {
      for (const asked of [name, `@d6e-ai/${name}`]) {
        const r = await h.call('GET', `/api/v1/stf-libraries/${encodeURIComponent(asked)}/types`, { token: owner.token });
        expect(r.status, asked).toBe(200);
        expect(r.body, asked).toContain(`declare module "${asked}" {`);
      }
    }
    // The scoped name also as it is written, unencoded.
    for (const name of NAMES) {
      const r = await h.call('GET', `/api/v1/stf-libraries/@d6e-ai/${name}/types`, { token: owner.token });
      expect(r.status, name).toBe(200);
      expect(r.body, name).toContain(`declare module "@d6e-ai/${name}" {`);
    }
    expect((await h.call('GET', '/api/v1/stf-libraries/@d6e-ai/lodash/types', { token: owner.token })).status).toBe(404);
    const font = await h.call('GET', `/api/v1/stf-libraries/${encodeURIComponent('@d6e-ai/mplus-1p-regular')}/types`, { token: owner.token });
    expect(font.body).toContain('const bytes: Uint8Array;');
  });

  test('unknown library → 404 NOT_FOUND in the error envelope', async ({ h, owner }) => {
    for (const name of ['lodash', 'date-fns%2Fformat', '%2E%2E', 'manifest', '%40d6e-ai%2Flodash', '%40d6e-ai%2Fdocx%2Fshapes', '%40d6e-ai']) {
      const r = await h.call('GET', `/api/v1/stf-libraries/${name}/types`, { token: owner.token });
      expect(r.status, name).toBe(404);
      expect(r.body, name).toMatchObject({ code: 'NOT_FOUND', error: expect.any(String) });
    }
  });
});

describe('bundled libraries through instant-run', () => {
  test('an STF imports date-fns (module form) and crypto-js (script form)', async ({ h, owner, ws }) => {
    const create = async (code: string) => {
      const r = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'lib', version: '1', runtime: 'javascript', code: b64(code) } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.version.id as string;
    };
    const run = (stf_version_id: string, input: unknown) =>
      h.call('POST', '/api/v1/stfs/instant-run', { token: owner.token, workspace: ws.id, body: { stf_version_id, input } });

    const dates = await create("import { addDays, format, parseISO } from 'date-fns';\nexport default (input) => format(addDays(parseISO(input.day), 1), 'EEEE d MMMM yyyy');");
    const r = await run(dates, { day: '2024-02-28' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, output: 'Thursday 29 February 2024' });

    const hash = await create("const { SHA256 } = await import('crypto-js');\nreturn SHA256($input.text).toString();");
    expect((await run(hash, { text: 'abc' })).body).toMatchObject({
      success: true,
      output: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    });

    // The origin platform's names, in its script form (a static import, then `return`).
    const origin = await create("import CryptoJS from '@d6e-ai/crypto-js';\nimport { utils, write } from '@d6e-ai/xlsx';\nconst wb = utils.book_new();\nutils.book_append_sheet(wb, utils.json_to_sheet([{ a: 1 }]), 'S');\nreturn { sha: CryptoJS.SHA256($input.text).toString(), xlsx: write(wb, { type: 'base64', bookType: 'xlsx' }).slice(0, 4) };");
    expect((await run(origin, { text: 'abc' })).body).toMatchObject({
      success: true,
      output: { sha: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', xlsx: 'UEsD' },
    });

    const refused = await create("import _ from 'lodash';\nexport default () => 1;");
    expect((await run(refused, {})).body).toMatchObject({ success: false, error: { kind: 'runtime', message: expect.stringContaining('module not allowed: lodash') } });
  });
});
