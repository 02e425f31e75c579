import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { receiveJsonUpload, receiveMultipartUpload, UploadError } from '../src/index.js';

/** A put that reads the bytes whole and answers them. */
const put = async (source: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const parts: Buffer[] = [];
  for await (const c of source) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
};

const BOUNDARY = 'wdsboundary';
const contentType = `multipart/form-data; boundary=${BOUNDARY}`;
function form(parts: { name: string; filename?: string; type?: string; body: string }[]): Readable {
  let out = '';
  for (const p of parts) {
    out += `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"` : ''}\r\n`;
    out += `${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n${p.body}\r\n`;
  }
  return Readable.from([Buffer.from(`${out}--${BOUNDARY}--\r\n`)]);
}

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UploadError);
  return (err as Error).message;
}

describe('receiveJsonUpload', () => {
  it('hands the decoded bytes to put and returns the three fields as given', async () => {
    const body = Readable.from([Buffer.from(JSON.stringify({ metadata: { a: [1] }, content: Buffer.from('hi').toString('base64'), filename: 'h.txt', other: 1 }))]);
    expect(await receiveJsonUpload(body, put)).toEqual({
      blob: Buffer.from('hi'),
      fields: { filename: 'h.txt', content_type: undefined, metadata: { a: [1] } },
    });
  });

  it('content is required', async () => {
    const body = Readable.from([Buffer.from('{"filename":"a"}')]);
    expect(await refusal(receiveJsonUpload(body, put))).toBe('content: required, the file as a base64 string');
  });
});

describe('receiveMultipartUpload', () => {
  it('the file part gives the bytes, filename and type; metadata is parsed JSON', async () => {
    const body = form([
      { name: 'metadata', body: '{"tag":"q1"}' },
      { name: 'file', filename: 'r.csv', type: 'text/csv', body: 'a,b' },
    ]);
    expect(await receiveMultipartUpload(body, contentType, put)).toEqual({
      blob: Buffer.from('a,b'),
      fields: { filename: 'r.csv', content_type: 'text/csv', metadata: { tag: 'q1' } },
    });
  });

  it('without a part type (text/plain, RFC 7578) or a metadata part (undefined)', async () => {
    const r = await receiveMultipartUpload(form([{ name: 'file', filename: 'x.bin', body: 'x' }]), contentType, put);
    expect(r.fields).toEqual({ filename: 'x.bin', content_type: 'text/plain', metadata: undefined });
  });

  it('refuses metadata that is not JSON and a body that is not multipart', async () => {
    const bad = form([
      { name: 'file', filename: 'a', body: 'x' },
      { name: 'metadata', body: '{nope' },
    ]);
    expect(await refusal(receiveMultipartUpload(bad, contentType, put))).toBe('metadata: not valid JSON');
    expect(await refusal(receiveMultipartUpload(Readable.from([Buffer.from('{}')]), 'application/json', put))).toBe('expected a multipart/form-data body');
    expect(await refusal(receiveMultipartUpload(Readable.from([Buffer.from('{}')]), undefined, put))).toBe('expected a multipart/form-data body');
  });
});
