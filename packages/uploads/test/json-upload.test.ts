import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseJsonUpload, UploadError } from '../src/index.js';

async function* chunks(text: string | Buffer, size: number): AsyncGenerator<Uint8Array> {
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

async function read(text: string | Buffer, size = 7) {
  const { content, done } = parseJsonUpload(chunks(text, size));
  const parts: Buffer[] = [];
  for await (const c of content) parts.push(c);
  return { bytes: Buffer.concat(parts), ...(await done) };
}

async function refusal(text: string, size = 5): Promise<string> {
  const err = await read(text, size).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UploadError);
  return (err as Error).message;
}

describe('parseJsonUpload', () => {
  const data = randomBytes(10_000);
  const b64 = data.toString('base64');

  it('decodes content in any chunking and collects the other members, in any order', async () => {
    const body = JSON.stringify({ metadata: { tags: ['a', { deep: '}"]' }] }, content: b64, filename: 'r\u00e9sum\u00e9 "1".pdf', content_type: 'application/pdf', n: 12.5e3, ok: true, nil: null });
    for (const size of [1, 3, 4, 7, 64, 4096, body.length]) {
      const r = await read(body, size);
      expect(r.bytes.equals(data), `chunk ${size}`).toBe(true);
      expect(r.sawContent).toBe(true);
      expect(r.fields).toEqual({ metadata: { tags: ['a', { deep: '}"]' }] }, filename: 'résumé "1".pdf', content_type: 'application/pdf', n: 12500, ok: true, nil: null });
    }
  });

  it('accepts whitespace, escaped slashes and MIME line breaks inside the base64', async () => {
    const mime = b64.replace(/(.{76})/g, '$1\\r\\n').replace(/\//g, '\\/');
    const r = await read(` \n{ "content" : "${mime}" ,\n "filename":"x" }\n `, 11);
    expect(createHash('sha256').update(r.bytes).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
  });

  it('handles empty content, unpadded base64 and no content at all', async () => {
    expect((await read('{"content":"","filename":"e"}')).bytes.length).toBe(0);
    expect((await read('{"content":"aGk"}')).bytes.toString()).toBe('hi');
    const none = await read('{"filename":"x"}');
    expect(none.sawContent).toBe(false);
  });

  it('refuses malformed JSON and base64 with a clear message', async () => {
    expect(await refusal('[1,2]')).toContain('must be a JSON object');
    expect(await refusal('{"content":"abc$"}')).toContain('not valid base64');
    expect(await refusal('{"content":"YQ==YQ=="}')).toContain('after its padding');
    expect(await refusal('{"content":"a"}')).toContain('truncated');
    expect(await refusal('{"content":123}')).toContain('must be a base64 string');
    expect(await refusal('{"content":"YQ==","content":"YQ=="}')).toContain('given twice');
    expect(await refusal('{"filename":"a" "x":1}')).toContain('expected "," or "}"');
    expect(await refusal('{"metadata":{bad}}')).toContain('metadata: not valid JSON');
    expect(await refusal('{"content":"YQ=="')).toContain('ended early');
    expect(await refusal('{"content":"YQ=="} x')).toContain('data after the object');
  });

  it('caps members other than content', async () => {
    expect(await refusal(`{"metadata":"${'x'.repeat(1024 * 1024 + 10)}"}`, 65536)).toContain('larger than');
  });

  it('streams: a large content never needs the whole body', async () => {
    // 128 MiB: far above what a loaded process's RSS moves by anyway (tens of MiB of garbage not yet collected), so
    // only holding the body would cross it.
    const blockBytes = 3 * 64 * 1024;
    const size = 683 * blockBytes;
    async function* body(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('{"filename":"big.bin","content":"');
      const block = Buffer.alloc(blockBytes, 7).toString('base64');
      for (let sent = 0; sent < size; sent += blockBytes) yield Buffer.from(block);
      yield Buffer.from('"}');
    }
    const { content, done } = parseJsonUpload(body());
    let total = 0;
    const before = process.memoryUsage().rss;
    for await (const c of content) total += c.length;
    expect(total).toBe(size);
    expect((await done).fields.filename).toBe('big.bin');
    expect(process.memoryUsage().rss - before).toBeLessThan(size);
  });
});
