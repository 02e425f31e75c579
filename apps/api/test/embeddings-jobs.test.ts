/**
 * Table embedding as a job, and embedding jobs that die: the request records and queues, the job reads and embeds;
 * a running job's deadline in the database follows its heartbeat; a dead job never holds its table's key.
 */
import { randomUUID } from 'node:crypto';
import { sql } from '@wds/db';
import type { JobRun } from '@wds/jobs';
import { EMBEDDING_QUEUE, type EmbeddingJob, embedFiles, embeddingDeps, handleEmbeddingJobs, jobKey, requeuePendingFiles } from '@wds/semantic-search';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Services } from '../src/services.js';
import { Harness, until } from './support.js';

const emb = (ws: string, path: string) => `/api/v1/workspaces/${ws}/embeddings${path}`;

let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
/** While set, embedding jobs wait for it before they start their work (they are claimed, and heartbeat, meanwhile). */
let hold: Promise<void> | undefined;
let release = () => {};
function holdJobs() {
  hold = new Promise((resolve) => {
    release = () => {
      hold = undefined;
      resolve();
    };
  });
}

beforeAll(async () => {
  // Polling (and so pg-boss maintenance, 5 polls) as rare as allowed: whatever expires a dead job here, the request did.
  h = await Harness.create({ JOB_POLL_INTERVAL_MS: '60000' });
  // The real embedding handler, behind a gate.
  let real: { run: (job: JobRun) => Promise<void>; opts: Parameters<Services['jobs']['handle']>[2] } | undefined;
  const capture: Pick<Services['jobs'], 'handle'> = {
    handle: (_name, run, opts) => {
      real = { run, opts };
    },
  };
  handleEmbeddingJobs({ ...h.services, jobs: capture as unknown as Services['jobs'] });
  h.services.jobs.handle(
    EMBEDDING_QUEUE,
    async (job) => {
      await hold;
      await real!.run(job);
    },
    real!.opts,
  );
  owner = await h.user('owner');
  ws = await h.workspace(owner.token, 'Jobs');
});
afterAll(async () => {
  release();
  await h?.close();
});

async function table(name: string, rows: number) {
  await h.sqlOk(owner.token, ws.id, `CREATE TABLE ${name} (body text)`);
  await h.allowAll(owner.token, ws.id, [owner.id], [name]);
  const values = Array.from({ length: rows }, (_, i) => `('note number ${i} about ${i % 2 ? 'printers' : 'invoices'}')`).join(', ');
  await h.sqlOk(owner.token, ws.id, `INSERT INTO ${name} (body) VALUES ${values}`);
}

const status = async (name: string) => {
  const r = await h.call('GET', emb(ws.id, '/tables/status'), { token: owner.token });
  expect(r.status).toBe(200);
  return r.body.tables.find((t: { table_name: string }) => t.table_name === name);
};

const items = async (name: string) =>
  (
    await sql<{ status: string; attempts: number }>`SELECT status, attempts FROM platform.embedding_items
      WHERE workspace_id = ${ws.id} AND surface = 'table_row' AND table_name = ${name}`.execute(h.services.db)
  ).rows;

const jobOf = async (name: string) =>
  (
    await sql<{ id: string; state: string; retry_count: number; seconds_left: number }>`
      SELECT id, state, retry_count, extract(epoch FROM started_on + expire_in - now())::float8 AS seconds_left
        FROM pgboss.job WHERE name = ${EMBEDDING_QUEUE} AND singleton_key = ${`table:${ws.id}:${name}`}
       ORDER BY created_on DESC LIMIT 1`.execute(h.services.db)
  ).rows[0];

describe('tables/embed runs as a job', () => {
  it('answers 202 with the table pending and reads no row; the job embeds them; regenerate does the same', async () => {
    await table('notes', 30);
    holdJobs();
    const r = await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['notes'] } });
    expect(r.status).toBe(202);
    expect(r.body.tables).toEqual([{ table_name: 'notes', total_rows: 30, embedded_rows: 0, pending_rows: 30, failed_rows: 0, status: 'pending' }]);
    // The request compared no row with anything: the job makes the items.
    expect(await items('notes')).toEqual([]);
    expect(await status('notes')).toMatchObject({ status: 'pending', pending_rows: 30 });
    // Searching now is told the work is pending (docs/embeddings.md#search: not searched before completed).
    const early = await h.call('POST', emb(ws.id, '/tables/search'), { token: owner.token, body: { query: 'printers' } });
    expect(early.status).toBe(409);

    release();
    await until(async () => ((await status('notes'))?.status === 'completed' ? true : undefined));
    expect(await status('notes')).toEqual({ table_name: 'notes', total_rows: 30, embedded_rows: 30, pending_rows: 0, failed_rows: 0, status: 'completed' });

    holdJobs();
    const regen = await h.call('POST', emb(ws.id, '/tables/regenerate'), { token: owner.token, body: { table_names: ['notes'] } });
    expect(regen.status).toBe(202);
    // Every row is to be embedded again; the old vectors stay searchable meanwhile.
    expect(regen.body.tables).toEqual([{ table_name: 'notes', total_rows: 30, embedded_rows: 30, pending_rows: 30, failed_rows: 0, status: 'pending' }]);
    expect((await items('notes')).every((i) => i.status === 'completed' && i.attempts === 1)).toBe(true);
    release();
    await until(async () => ((await items('notes')).every((i) => i.status === 'completed' && i.attempts === 2) ? true : undefined));
    expect(await status('notes')).toMatchObject({ status: 'completed', embedded_rows: 30, pending_rows: 0 });
  });

  it('while a table job runs, its deadline in the database is its heartbeat (a minute ahead), not the 15 min deadline', async () => {
    await table('beats', 3);
    holdJobs();
    const r = await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['beats'] } });
    expect(r.status).toBe(202);
    const running = await until(async () => {
      const job = await jobOf('beats');
      return job?.state === 'active' ? job : undefined;
    });
    // Were its process to die now, maintenance would retry it within about a minute.
    expect(running.seconds_left).toBeLessThanOrEqual(61);
    release();
    await until(async () => ((await status('beats'))?.status === 'completed' ? true : undefined));
  });
});

describe('a dead embedding job', () => {
  it("does not hold its table's key: asking again expires it at once, and its retry embeds the table", async () => {
    await table('stuck', 4);
    await h.services.jobs.start(); // the queue exists
    // A job of this table claimed by a process that died 90 s after starting it, two minutes ago: its heartbeat
    // deadline has passed. Nothing else (pg-boss maintenance runs every 5 min here) would retry it yet.
    const dead = randomUUID();
    await sql`
      INSERT INTO pgboss.job (id, name, data, state, retry_limit, singleton_key, started_on, expire_in, dead_letter, policy)
      VALUES (${dead}, ${EMBEDDING_QUEUE}, ${JSON.stringify({ id: dead, data: { kind: 'table', workspaceId: ws.id, table: 'stuck' } })}::jsonb,
              'active', 2, ${`table:${ws.id}:stuck`}, now() - interval '210 seconds', interval '150 seconds',
              ${`${EMBEDDING_QUEUE}__failed`}, 'standard')`.execute(h.services.db);

    const r = await h.call('POST', emb(ws.id, '/tables/embed'), { token: owner.token, body: { table_names: ['stuck'] } });
    expect(r.status).toBe(202);
    // The request got a job: the dead one, expired by the request itself into its retry (waiting, or already
    // claimed as attempt 2), no longer its dead first attempt.
    const after = await jobOf('stuck');
    expect(after?.id).toBe(dead);
    expect([after?.state, after?.retry_count]).not.toEqual(['active', 0]);
    await until(async () => ((await status('stuck'))?.status === 'completed' ? true : undefined));
    expect(await jobOf('stuck')).toMatchObject({ id: dead, state: 'completed', retry_count: 1 });
    expect(await status('stuck')).toMatchObject({ embedded_rows: 4, pending_rows: 0 });
  });
});

describe('a file embedding left pending without a job', () => {
  it('is queued again by the sweep, once however often it sweeps, and embedded', async () => {
    const up = await h.call('POST', `/api/v1/workspaces/${ws.id}/files`, {
      token: owner.token,
      workspace: ws.id,
      body: { filename: 'lost.txt', content_type: 'text/plain', content: Buffer.from('the toner order went missing').toString('base64') },
    });
    expect(up.status, JSON.stringify(up.body)).toBe(201);
    // The request committed the item, then its enqueue failed (the database went away for a moment).
    const blip = { ...embeddingDeps(h.services), enqueue: async () => Promise.reject(new Error('blip')) };
    await expect(embedFiles(blip, ws.id, [up.body.id], false)).rejects.toThrow('blip');
    const item = (
      await sql<{ id: string; status: string }>`SELECT id, status FROM platform.embedding_items
        WHERE workspace_id = ${ws.id} AND surface = 'file' AND file_id = ${up.body.id}`.execute(h.services.db)
    ).rows[0]!;
    expect(item.status).toBe('pending');
    const jobs = async () =>
      (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = ${EMBEDDING_QUEUE} AND singleton_key = ${`file:${item.id}`}`.execute(h.services.db))
        .rows[0]!.n;
    expect(await jobs()).toBe(0);

    holdJobs();
    const enqueue = async (job: EmbeddingJob) => void (await h.services.jobs.enqueue(EMBEDDING_QUEUE, job, jobKey(job)));
    expect(await requeuePendingFiles(h.services.db, enqueue, { olderThanMs: 0 })).toBeGreaterThanOrEqual(1);
    await requeuePendingFiles(h.services.db, enqueue, { olderThanMs: 0 });
    expect(await jobs()).toBe(1);
    release();
    await until(async () => {
      const r = await h.call('GET', emb(ws.id, '/files/status'), { token: owner.token });
      const f = r.body.files.find((x: { file_id?: string; id?: string }) => (x.file_id ?? x.id) === up.body.id);
      return f?.status === 'completed' ? true : undefined;
    }, 30_000);
  });
});
