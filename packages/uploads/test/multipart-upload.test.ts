import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseMultipartUpload, UploadError } from '../src/index.js';

const BOUNDARY = 'wdsboundary';
const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };
function form(parts: { name: string; filename?: string; type?: string; body: string | Buffer }[]): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    out.push(Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`));
    out.push(Buffer.isBuffer(p.body) ? p.body : Buffer.from(p.body));
    out.push(Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(out);
}
const drain = async (file: { stream: Readable; filename: string; contentType: string }) => {
  const parts: Buffer[] = [];
  for await (const c of file.stream) parts.push(c as Buffer);
  return { name: file.filename, type: file.contentType, bytes: Buffer.concat(parts) };
};

describe('parseMultipartUpload', () => {
  it('streams the file part and collects fields in any order', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 13, 10, 45, 45]);
    const body = form([
      { name: 'metadata', body: '{"a":1}' },
      { name: 'file', filename: 'data.bin', type: 'application/x-thing', body: bytes },
    ]);
    const r = await parseMultipartUpload(Readable.from([body.subarray(0, 50), body.subarray(50)]), headers, drain);
    expect(r.fields).toEqual({ metadata: '{"a":1}' });
    expect(r.file).toMatchObject({ name: 'data.bin', type: 'application/x-thing' });
    expect(r.file.bytes.equals(bytes)).toBe(true);
  });

  it('refuses a missing file part, another file part, a second file and a non-multipart body', async () => {
    const cases: [Buffer, Record<string, string>, string][] = [
      [form([{ name: 'metadata', body: '{}' }]), headers, 'the part "file" is missing'],
      [form([{ name: 'upload', filename: 'x', body: 'x' }]), headers, 'unexpected file part "upload"'],
      [form([{ name: 'file', filename: 'a', body: 'a' }, { name: 'file', filename: 'b', body: 'b' }]), headers, 'only one file part'],
      [Buffer.from('{}'), { 'content-type': 'application/json' }, 'expected a multipart/form-data body'],
    ];
    for (const [body, h, message] of cases) {
      const err = await parseMultipartUpload(Readable.from([body]), h, drain).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, message).toBeInstanceOf(UploadError);
      expect((err as Error).message).toContain(message);
    }
  });

  it('stops at once when the consumer fails (e.g. too large)', async () => {
    const big = Buffer.alloc(1024 * 1024, 1);
    const body = form([{ name: 'file', filename: 'x', body: big }]);
    const boom = new Error('too large');
    const err = await parseMultipartUpload(Readable.from([body]), headers, async (f) => {
      for await (const _ of f.stream) throw boom;
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBe(boom);
  });
});
