/**
 * Builds test images offline through the engine's own build endpoint (`POST /build`, Docker Engine API; podman's
 * compatible service answers it too): the build context is a directory of fixtures, packed here as a tar stream,
 * `FROM` is an image the engine already holds (passed as the build argument BASE), and the build has no network.
 * Nothing is pulled. The tag carries a hash of the context, so an unchanged fixture is built once per engine.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { type EngineAddress, parseDockerHost } from '../src/docker/engine.js';

/** One ustar entry: a 512-byte header, the bytes, padding to 512. Plain files only (what fixtures are). */
function tarEntry(name: string, body: Buffer): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`fixture name too long for a tar header: ${name}`);
  const header = Buffer.alloc(512);
  header.write(name, 0, 'utf8');
  header.write('0000644\0', 100); // mode
  header.write('0000000\0', 108); // uid
  header.write('0000000\0', 116); // gid
  header.write(`${body.length.toString(8).padStart(11, '0')}\0`, 124);
  header.write('00000000000\0', 136); // mtime: fixed, so the context (and its hash) depends on the bytes only
  header.write('        ', 148); // checksum placeholder: spaces
  header.write('0', 156); // a regular file
  header.write('ustar\x0000', 257);
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  const pad = Buffer.alloc((512 - (body.length % 512)) % 512);
  return Buffer.concat([header, body, pad]);
}

async function packContext(dir: string): Promise<Buffer> {
  const names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name).sort();
  const entries = await Promise.all(names.map(async (n) => tarEntry(n, await readFile(join(dir, n)))));
  return Buffer.concat([...entries, Buffer.alloc(1024)]);
}

function post(address: EngineAddress, path: string, body: Buffer, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { ...address, method: 'POST', path: `/v1.41${path}`, headers: { host: 'docker', 'content-type': 'application/x-tar', 'content-length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`the build did not finish within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Builds the Dockerfile in `dir` (and the files next to it) as `<name>:<hash>`, with `buildArgs` (BASE: the image to
 * build FROM). Returns the tag. Throws with the build's output when it fails.
 */
export async function buildFixtureImage(
  dockerHost: string,
  dir: string,
  name: string,
  buildArgs: Record<string, string>,
  timeoutMs = 120_000,
): Promise<string> {
  const context = await packContext(dir);
  const hash = createHash('sha256').update(context).update(JSON.stringify(buildArgs)).digest('hex').slice(0, 16);
  const tag = `${name}:${hash}`;
  const query = new URLSearchParams({ t: tag, networkmode: 'none', rm: '1', pull: '0', buildargs: JSON.stringify(buildArgs) });
  const res = await post(parseDockerHost(dockerHost), `/build?${query}`, context, timeoutMs);
  // The endpoint streams JSON lines; a failure is a non-2xx status or an `error` line.
  const lines = res.text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      try {
        return JSON.parse(l) as { stream?: string; error?: string; errorDetail?: { message?: string } };
      } catch {
        return { stream: l };
      }
    });
  const failed = lines.find((l) => l.error || l.errorDetail);
  if (res.status >= 300 || failed) {
    throw new Error(`building ${tag} failed (HTTP ${res.status}): ${failed?.error ?? ''}\n${lines.map((l) => l.stream ?? '').join('')}`);
  }
  return tag;
}
