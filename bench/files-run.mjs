// Upload and download throughput of 1 GiB over loopback, for both upload forms (JSON base64 and multipart), side by
// side with a raw disk write of the same bytes in the same run, and the server's peak resident memory. Prints
// figures and ratios; never an assertion. BENCH_FILE_MB changes the size (default 1024).
import { createHash, randomBytes } from 'node:crypto';
import { fork } from 'node:child_process';
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, startTestPostgres } from '@wds/testkit';

const SIZE = Number(process.env.BENCH_FILE_MB ?? 1024) * 1024 * 1024;
const BLOCK = 3 * 256 * 1024;
const seed = randomBytes(BLOCK);
function* generate() {
  for (let sent = 0, n = 0; sent < SIZE; sent += BLOCK, n++) {
    const block = Buffer.from(seed.subarray(0, Math.min(BLOCK, SIZE - sent)));
    block.writeUInt32BE(n, 0);
    yield block;
  }
}
const mbps = (bytes, ms) => (bytes / 1024 / 1024 / (ms / 1000)).toFixed(0);

const dir = mkdtempSync(join(tmpdir(), 'wds-bench-files-'));
// Raw disk: the same bytes written to a file and fsynced.
let t = performance.now();
const fd = openSync(join(dir, 'raw.bin'), 'w');
for (const b of generate()) writeSync(fd, b);
fsyncSync(fd);
closeSync(fd);
const rawMs = performance.now() - t;
rmSync(join(dir, 'raw.bin'));

const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'bench' });
const child = fork(new URL('./file-servers.mjs', import.meta.url), { env: { ...process.env, DATABASE_URL: url, STORAGE_DIR: join(dir, 'blobs') } });
const setup = await new Promise((ok, fail) => {
  child.once('message', ok);
  child.once('exit', (code) => fail(new Error(`server exited with ${code}`)));
});
const api = new URL(setup.apiUrl);
// Whatever happens, do not leave the server running.
process.on('exit', () => child.kill());

function send(path, contentType, parts) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: api.hostname, port: api.port, path, method: 'POST', headers: { authorization: `Bearer ${setup.token}`, 'x-workspace-id': setup.workspaceId, 'content-type': contentType } });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => (res.statusCode === 201 ? resolve(JSON.parse(text)) : reject(new Error(`${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    const it = parts[Symbol.iterator]();
    const pump = () => {
      for (;;) {
        const next = it.next();
        if (next.done) return void req.end();
        if (!req.write(next.value)) return void req.once('drain', pump);
      }
    };
    pump();
  });
}
// The client stands in for another machine, so it should cost the shared cores as little as possible: the base64
// of the seed is computed once (BLOCK is a multiple of 3, so blocks encode independently) and each block only
// re-encodes its first 6 bytes, the ones generate() changes.
const seedBase64 = Buffer.from(seed.toString('base64'));
function* json() {
  yield Buffer.from('{"filename":"big.bin","content":"');
  for (const b of generate()) {
    if (b.length !== BLOCK) {
      yield Buffer.from(b.toString('base64'));
      continue;
    }
    const text = Buffer.from(seedBase64);
    text.write(b.subarray(0, 6).toString('base64'), 0, 'latin1');
    yield text;
  }
  yield Buffer.from('"}');
}
// A boundary like the one curl sends; busboy's boundary search skips ahead by its length, so a short made-up
// boundary (such as "zz") would make multipart parsing look several times slower than real clients see it.
const BOUNDARY = '------------------------d74496d66958873e';
function* multipart() {
  yield Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  yield* generate();
  yield Buffer.from(`\r\n--${BOUNDARY}--\r\n`);
}
function download(id) {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    http
      .get({ host: api.hostname, port: api.port, path: `/api/v1/workspaces/${setup.workspaceId}/files/${id}/download`, headers: { authorization: `Bearer ${setup.token}`, 'x-workspace-id': setup.workspaceId } }, (res) => {
        res.on('data', (d) => hash.update(d));
        res.on('end', () => resolve(hash.digest('hex')));
      })
      .on('error', reject);
  });
}
const rss = () => new Promise((ok) => {
  child.once('message', ok);
  child.send('rss');
});

const results = [];
for (const [form, path, type, body] of [
  ['json', `/api/v1/workspaces/${setup.workspaceId}/files`, 'application/json', json],
  ['multipart', `/api/v1/workspaces/${setup.workspaceId}/files/multipart`, `multipart/form-data; boundary=${BOUNDARY}`, multipart],
]) {
  t = performance.now();
  const file = await send(path, type, body());
  const upMs = performance.now() - t;
  t = performance.now();
  const digest = await download(file.id);
  const downMs = performance.now() - t;
  if (digest !== file.sha256) throw new Error(`${form}: the download differs from the upload`);
  results.push({ form, upMs, downMs });
}
const mem = await rss();

console.log(`${SIZE / 1024 / 1024} MiB over loopback, filesystem blob store, PostgreSQL ${server.kind}\n`);
console.log(`raw disk write + fsync:   ${mbps(SIZE, rawMs)} MiB/s`);
for (const r of results) {
  console.log(
    `${r.form.padEnd(10)} upload ${mbps(SIZE, r.upMs).padStart(5)} MiB/s (${(SIZE / 1024 / 1024 / (r.upMs / 1000) / (SIZE / 1024 / 1024 / (rawMs / 1000))).toFixed(2)}x raw)  download ${mbps(SIZE, r.downMs).padStart(5)} MiB/s`,
  );
}
console.log(`server peak RSS: ${(mem.maxRssBytes / 1024 / 1024).toFixed(0)} MiB (now ${(mem.rss / 1024 / 1024).toFixed(0)} MiB)`);
child.send('stop');
await new Promise((ok) => child.once('exit', ok));
await server.stop();
rmSync(dir, { recursive: true, force: true });
