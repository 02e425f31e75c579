import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, until } from './support.js';

const MAX = 1024 * 1024; // MAX_FILE_BYTES of this harness
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let blobDir: string;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const files = (workspace = ws.id) => `/api/v1/workspaces/${workspace}/files`;
async function uploadJson(body: unknown, token = owner.token, workspace = ws.id) {
  return h.call('POST', files(workspace), { token, workspace, body });
}
function multipart(parts: { name: string; filename?: string; type?: string; body: string | Buffer }[]): { body: Buffer; type: string } {
  const boundary = `b${randomBytes(8).toString('hex')}`;
  const out: Buffer[] = [];
  for (const p of parts) {
    out.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`,
      ),
    );
    out.push(Buffer.isBuffer(p.body) ? p.body : Buffer.from(p.body));
    out.push(Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(out), type: `multipart/form-data; boundary=${boundary}` };
}
async function uploadMultipart(parts: Parameters<typeof multipart>[0], token = owner.token) {
  const { body, type } = multipart(parts);
  const res = await h.app.request(`${files()}/multipart`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'x-workspace-id': ws.id, 'content-type': type }, body });
  return { status: res.status, body: (await res.json()) as any };
}
async function download(id: string, headers: Record<string, string> = {}) {
  const res = await h.app.request(`${files()}/${id}/download`, { headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id, ...headers } });
  return { res, bytes: Buffer.from(await res.arrayBuffer()) };
}
/** Every file under the blob store's directory, temporary ones included. */
function blobFiles(dir = blobDir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? blobFiles(p) : [p];
  });
}

beforeAll(async () => {
  h = await Harness.create({ MAX_FILE_BYTES: String(MAX) });
  blobDir = h.blobDir;
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Files');
});
afterAll(async () => {
  await h?.close();
});

describe('uploads', () => {
  it('JSON base64: stores the bytes and answers the upload response; get, list, download agree', async () => {
    const bytes = randomBytes(100_000);
    const r = await uploadJson({ filename: 'report.pdf', content_type: 'application/pdf', content: bytes.toString('base64'), metadata: { project: 'x' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ filename: 'report.pdf', content_type: 'application/pdf', size: 100_000, sha256: sha(bytes) });
    expect(typeof r.body.id).toBe('string');
    expect(typeof r.body.created_at).toBe('string');
    const got = await h.call('GET', `${files()}/${r.body.id}`, { token: owner.token, workspace: ws.id });
    expect(got.body).toMatchObject({ id: r.body.id, metadata: { project: 'x' }, size: 100_000 });
    expect(got.body).not.toHaveProperty('blob_key');
    const list = await h.call('GET', files(), { token: owner.token, workspace: ws.id });
    expect(list.body.map((f: any) => f.id)).toContain(r.body.id);
    expect(list.body[0]).not.toHaveProperty('content');
    const d = await download(r.body.id);
    expect(d.res.status).toBe(200);
    expect(sha(d.bytes)).toBe(sha(bytes));
    expect(d.res.headers.get('content-type')).toBe('application/pdf');
    expect(d.res.headers.get('content-length')).toBe('100000');
    expect(d.res.headers.get('content-disposition')).toContain('attachment; filename="report.pdf"');
    expect(d.res.headers.get('x-content-type-options')).toBe('nosniff');
    // The request id reaches a streamed answer too (the handler's own Response).
    const traced = await download(r.body.id, { 'x-request-id': 'download-trace-1' });
    expect(traced.res.headers.get('x-request-id')).toBe('download-trace-1');
  });

  it('multipart: part file with its name and type, optional metadata JSON', async () => {
    const bytes = randomBytes(5000);
    const r = await uploadMultipart([
      { name: 'metadata', body: '{"source":"scanner"}' },
      { name: 'file', filename: 'scan été.png', type: 'image/png', body: bytes },
    ]);
    expect(r.status).toBe(201);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toMatchObject({ filename: 'scan été.png', content_type: 'image/png', size: 5000 });
    expect((await h.call('GET', `${files()}/${r.body.id}`, { token: owner.token, workspace: ws.id })).body.metadata).toEqual({ source: 'scanner' });
    const d = await download(r.body.id);
    expect(d.bytes.equals(bytes)).toBe(true);
    expect(d.res.headers.get('content-disposition')).toContain(`filename*=UTF-8''${encodeURIComponent('scan été.png')}`);
  });

  it('answers HTTP ranges with 206, suffix ranges too, and 416 past the end', async () => {
    const bytes = Buffer.from('0123456789abcdef');
    const r = await uploadJson({ filename: 'r.txt', content_type: 'text/plain', content: bytes.toString('base64') });
    const part = await download(r.body.id, { range: 'bytes=2-5' });
    expect(part.res.status).toBe(206);
    expect(part.bytes.toString()).toBe('2345');
    expect(part.res.headers.get('content-range')).toBe('bytes 2-5/16');
    expect(part.res.headers.get('content-length')).toBe('4');
    expect((await download(r.body.id, { range: 'bytes=-3' })).bytes.toString()).toBe('def');
    expect((await download(r.body.id, { range: 'bytes=10-' })).bytes.toString()).toBe('abcdef');
    const past = await download(r.body.id, { range: 'bytes=16-20' });
    expect(past.res.status).toBe(416);
    expect(past.res.headers.get('content-range')).toBe('bytes */16');
  });

  it('refuses bad uploads with 400 and details, storing nothing', async () => {
    const before = (await h.call('GET', files(), { token: owner.token, workspace: ws.id })).body.length;
    const blobsBefore = blobFiles().length;
    const cases: [unknown, string][] = [
      [{ filename: 'a.txt', content: 'not base64!' }, 'content: not valid base64'],
      [{ content: 'aGk=' }, 'filename: required'],
      [{ filename: '../etc/passwd', content: 'aGk=' }, 'filename'],
      [{ filename: 'a.txt' }, 'content: required'],
      [{ filename: 'a.txt', content: 'aGk=', metadata: [1] }, 'metadata: must be a JSON object'],
      [{ filename: 'a.txt', content: 'aGk=', content_type: 'not a type' }, 'content_type'],
    ];
    for (const [body, detail] of cases) {
      const r = await uploadJson(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
      expect(r.body.details).toContain(detail);
    }
    const raw = await h.app.request(files(), { method: 'POST', headers: { authorization: `Bearer ${owner.token}`, 'x-workspace-id': ws.id, 'content-type': 'application/json' }, body: '{"filename":' });
    expect(raw.status).toBe(400);
    const badMeta = await uploadMultipart([
      { name: 'metadata', body: '{nope' },
      { name: 'file', filename: 'x.bin', body: 'x' },
    ]);
    expect(badMeta.status).toBe(400);
    expect(badMeta.body.details).toContain('metadata: not valid JSON');
    const noFile = await uploadMultipart([{ name: 'metadata', body: '{}' }]);
    expect(noFile.body.details).toContain('the part "file" is missing');
    const noName = await uploadMultipart([{ name: 'file', filename: '', body: 'x' }]);
    expect(noName.status).toBe(400);
    expect((await h.call('GET', files(), { token: owner.token, workspace: ws.id })).body.length).toBe(before);
    expect(blobFiles().length).toBe(blobsBefore);
  });

  it('answers 413 above MAX_FILE_BYTES, in both forms, storing nothing; exactly the limit is fine', async () => {
    const blobsBefore = blobFiles().length;
    const over = Buffer.alloc(MAX + 1, 1);
    const json = await uploadJson({ filename: 'big.bin', content: over.toString('base64') });
    expect(json.status).toBe(413);
    expect(json.body.code).toBe('PAYLOAD_TOO_LARGE');
    const form = await uploadMultipart([{ name: 'file', filename: 'big.bin', body: over }]);
    expect(form.status).toBe(413);
    expect(blobFiles().length).toBe(blobsBefore);
    const exact = await uploadJson({ filename: 'exact.bin', content: Buffer.alloc(MAX, 2).toString('base64') });
    expect(exact.status).toBe(201);
    expect(exact.body.size).toBe(MAX);
  });

  it('a client that disconnects mid-upload leaves no file and no blob', async () => {
    const server = serve({ fetch: h.app.fetch, hostname: '127.0.0.1', port: 0 });
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as AddressInfo).port;
    const before = (await h.call('GET', files(), { token: owner.token, workspace: ws.id })).body.length;
    const blobsBefore = blobFiles().length;
    try {
      for (const path of [files(), `${files()}/multipart`]) {
        await new Promise<void>((resolve, reject) => {
          const req = http.request({
            host: '127.0.0.1',
            port,
            path,
            method: 'POST',
            headers: {
              authorization: `Bearer ${owner.token}`,
              'x-workspace-id': ws.id,
              'content-type': path.endsWith('multipart') ? 'multipart/form-data; boundary=zz' : 'application/json',
              'content-length': String(10 * MAX),
            },
          });
          req.on('error', () => resolve());
          req.on('close', () => resolve());
          req.write(path.endsWith('multipart') ? '--zz\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\n' : '{"filename":"cut.bin","content":"');
          req.write(Buffer.alloc(64 * 1024, 0x41));
          // Cut once the server is storing the bytes (its temp file exists), the case that must clean up.
          until(async () => (blobFiles().some((f) => f.endsWith('.tmp')) ? true : undefined)).then(
            () => req.destroy(),
            (err) => {
              reject(err);
              req.destroy();
            },
          );
        });
        // The server notices the cut and cleans up (before the next form's temp file is looked for).
        await until(async () => (blobFiles().length === blobsBefore ? true : undefined));
      }
      expect(blobFiles().length).toBe(blobsBefore);
      expect((await h.call('GET', files(), { token: owner.token, workspace: ws.id })).body.length).toBe(before);
    } finally {
      server.close();
    }
  });
});

describe('permissions, isolation, deletion, audit', () => {
  it('members download; only storage editors upload and delete; others see nothing', async () => {
    const r = await uploadJson({ filename: 'shared.txt', content: Buffer.from('hello').toString('base64') });
    const member = await h.user('member');
    await h.addMember(owner.token, ws.id, member.email, 'member');
    // Without an editor group, storage editors are the admins.
    expect((await uploadJson({ filename: 'm.txt', content: 'aGk=' }, member.token)).status).toBe(403);
    expect((await h.call('DELETE', `${files()}/${r.body.id}`, { token: member.token, workspace: ws.id })).status).toBe(403);
    expect((await h.call('GET', `${files()}/${r.body.id}`, { token: member.token, workspace: ws.id })).status).toBe(200);
    // With an editor group, its members may upload.
    const g = await h.group(owner.token, ws.id, { name: 'editors', user_ids: [member.id] });
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: g } });
    expect((await uploadJson({ filename: 'm.txt', content: 'aGk=' }, member.token)).status).toBe(201);
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: null } });

    const stranger = await h.user('stranger');
    expect((await h.call('GET', `${files()}/${r.body.id}`, { token: stranger.token, workspace: ws.id })).status).toBe(403);
    const theirs = await h.workspace(stranger.token, 'Theirs');
    const as = { token: stranger.token, workspace: theirs.id };
    // The path's workspace id is ignored (docs/http-api.md#where-the-workspace-comes-from): the header decides, and the
    // file is not in theirs.
    for (const path of [`${files()}/${r.body.id}`, `/api/v1/workspaces/${theirs.id}/files/${r.body.id}`]) {
      expect((await h.call('GET', path, as)).status).toBe(404);
      expect((await h.call('GET', `${path}/download`, as)).status).toBe(404);
      expect((await h.call('DELETE', path, as)).status).toBe(404);
    }
    expect((await h.call('GET', files(), as)).body).toEqual([]);
    // Without X-Workspace-ID: 400.
    expect((await h.call('GET', files(), { token: owner.token })).status).toBe(400);
  });

  it('soft delete hides the file everywhere; upload and delete are audited', async () => {
    const r = await uploadJson({ filename: 'gone.txt', content: 'aGk=' });
    expect((await h.call('DELETE', `${files()}/${r.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(204);
    expect((await h.call('GET', `${files()}/${r.body.id}`, { token: owner.token, workspace: ws.id })).status).toBe(404);
    expect((await download(r.body.id)).res.status).toBe(404);
    expect((await h.call('GET', files(), { token: owner.token, workspace: ws.id })).body.map((f: any) => f.id)).not.toContain(r.body.id);
    const audit = await h.call('GET', '/api/v1/audit-logs?limit=1000', { token: owner.token, workspace: ws.id });
    const actions = audit.body.filter((e: any) => e.resource_id === r.body.id).map((e: any) => e.action);
    expect(actions.sort()).toEqual(['delete_file', 'upload_file']);
  });
});

describe('text extraction', () => {
  it('answers the text of a file in pages of characters; 415 for images, 404 for another workspace’s file', async () => {
    const text = `${'é'.repeat(5)}line two\n`;
    const f = (await uploadJson({ filename: 'notes.md', content_type: 'text/markdown', content: Buffer.from(`# Title\n\n${text}`).toString('base64') })).body;
    const whole = await h.call('GET', `${files()}/${f.id}/text`, { token: owner.token, workspace: ws.id });
    expect(whole.status).toBe(200);
    expect(whole.body).toMatchObject({ file_id: f.id, filename: 'notes.md', content_type: 'text/markdown', offset: 0, next_offset: null });
    expect(whole.body.text).toContain('line two');
    const total = whole.body.total_chars;
    const page = await h.call('GET', `${files()}/${f.id}/text?offset=2&limit=3`, { token: owner.token, workspace: ws.id });
    expect(page.body).toMatchObject({ text: Array.from(whole.body.text as string).slice(2, 5).join(''), offset: 2, total_chars: total, next_offset: 5 });
    expect((await h.call('GET', `${files()}/${f.id}/text?limit=0`, { token: owner.token, workspace: ws.id })).body.code).toBe('VALIDATION_ERROR');

    const png = (await uploadJson({ filename: 'p.png', content_type: 'image/png', content: Buffer.from('89504e470d0a1a0a', 'hex').toString('base64') })).body;
    const refused = await h.call('GET', `${files()}/${png.id}/text`, { token: owner.token, workspace: ws.id });
    expect(refused.status).toBe(415);
    expect(refused.body.code).toBe('UNSUPPORTED_MEDIA_TYPE');

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'theirs');
    const cross = await h.call('GET', `/api/v1/workspaces/${theirs.id}/files/${f.id}/text`, { token: stranger.token, workspace: theirs.id });
    expect(cross.status).toBe(404);
    expect(JSON.stringify(cross.body)).not.toContain('line two');
  });
});
