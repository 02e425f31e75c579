import '@wds/testkit';
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import PgBoss from 'pg-boss';
import { describe, expect, it } from 'vitest';
import type { Job } from '../src/index.js';
import { assertDistIsFresh, forever, until, useJobQueues } from './helpers.js';

const queues = useJobQueues();

/** heartbeat-worker.mjs in its own process: deadlines of 10 min, a 1 s stale threshold; killed with SIGKILL. */
async function worker(): Promise<{ started: Set<string>; kill: () => Promise<void> }> {
  assertDistIsFresh();
  const child: ChildProcess = spawn(process.execPath, [fileURLToPath(new URL('./fixtures/heartbeat-worker.mjs', import.meta.url)), queues.url], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const started = new Set<string>();
  let ready = false;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    if (line === 'ready') ready = true;
    else started.add(JSON.parse(line).started);
  });
  await until(() => ready || child.exitCode !== null);
  expect(child.exitCode).toBeNull();
  return {
    started,
    kill: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('heartbeat', () => {
  it('a job whose process was killed is retried once its heartbeat is stale, long before its 10 min deadline', async () => {
    const child = await worker();
    try {
      const survivor = await queues.start();
      const id = (await survivor.enqueue('hb-crash', { n: 1 }))!;
      await until(() => child.started.has(id));
      await child.kill();
      expect(await survivor.getJob('hb-crash', id)).toBe('active');

      const runs: Job<unknown>[] = [];
      await survivor.register('hb-crash', async (job) => void runs.push(job), { expireInSeconds: 600, retryLimit: 1 });
      // until() gives up after 15 s: the 600 s deadline would never make it.
      await until(() => survivor.getJob('hb-crash', id), (s) => s === 'completed');
      expect(runs.map((r) => [r.id, r.attempt, r.data])).toEqual([[id, 2, { n: 1 }]]);
    } finally {
      await child.kill();
    }
  });

  it('a job that runs longer than the stale threshold while its process lives is not expired', async () => {
    const queue = await queues.start({ heartbeatIntervalSeconds: 0.2, heartbeatStaleSeconds: 1 });
    const runs: Job<unknown>[] = [];
    await queue.register(
      'hb-alive',
      async (job) => {
        runs.push(job);
        // Three maintenance runs (each at least a second after the last): the last two find the job older than
        // the 1 s stale threshold, its heartbeat alone keeping it.
        await queues.maintenance(3);
      },
      { expireInSeconds: 600, retryLimit: 1 },
    );
    const id = (await queue.enqueue('hb-alive', {}))!;
    await until(() => queue.getJob('hb-alive', id), (s) => s === 'completed');
    expect(runs.map((r) => [r.attempt, r.signal.aborted])).toEqual([[1, false]]);
  });

  it('an attempt whose job was expired meanwhile is told by its next heartbeat (its signal aborts)', async () => {
    const queue = await queues.start({ heartbeatIntervalSeconds: 0.2, heartbeatStaleSeconds: 1 });
    const runs: Job<unknown>[] = [];
    await queue.register(
      'hb-superseded',
      async (job) => {
        runs.push(job);
        await forever();
      },
      { expireInSeconds: 600, retryLimit: 0 },
    );
    const id = (await queue.enqueue('hb-superseded', {}))!;
    await until(() => runs.length === 1);
    // What maintenance does to a job it finds expired (say, after a long pause of this process).
    const boss = new PgBoss({ connectionString: queues.url, schedule: false, supervise: false });
    await boss.start();
    try {
      await boss.fail('hb-superseded', id, { message: 'expired' });
    } finally {
      await boss.stop({ graceful: false });
    }
    await until(() => runs[0]!.signal.aborted);
    expect(String(runs[0]!.signal.reason?.message)).toMatch(/^superseded/);
    expect(await queue.getJob('hb-superseded', id)).toBe('failed'); // the late attempt did not settle it again
  });
});

describe('singletonKey and a dead job', () => {
  it('a running job whose heartbeat stopped does not hold its key: enqueue expires it into its retry, or queues a new job after its last attempt', async () => {
    const child = await worker();
    try {
      // Hourly maintenance: whatever is expired here, enqueue did it.
      const survivor = await queues.start({ maintenanceIntervalSeconds: 3600 });
      const key = { singletonKey: 'table:t' };
      const retried = (await survivor.enqueue('hb-key-retry', { n: 1 }, key))!;
      const last = (await survivor.enqueue('hb-key-final', { n: 2 }, key))!;
      await until(() => child.started.has(retried) && child.started.has(last));
      // Alive and beating: the key is held.
      expect(await survivor.enqueue('hb-key-retry', { n: 3 }, key)).toBeNull();

      await child.kill();
      // Once the heartbeat is stale, asking again expires the dead attempt: its retry is queued at once.
      await until(
        async () => {
          expect(await survivor.enqueue('hb-key-retry', { n: 3 }, key)).toBeNull();
          return survivor.getJob('hb-key-retry', retried);
        },
        (s) => s === 'retry',
      );
      // The other job had no attempt left: it fails, and the request gets a job of its own.
      const fresh = await until(() => survivor.enqueue('hb-key-final', { n: 4 }, key), (id) => id !== null);
      expect(fresh).not.toBe(last);
      expect(await survivor.getJob('hb-key-final', last)).toBe('failed');

      const runs: Job<unknown>[] = [];
      const failed: unknown[] = [];
      await survivor.register('hb-key-retry', async (job) => void runs.push(job), { expireInSeconds: 600, retryLimit: 1 });
      await survivor.register('hb-key-final', async (job) => void runs.push(job), {
        expireInSeconds: 600,
        retryLimit: 0,
        onFailed: async (job, message) => void failed.push([job.id, message]),
      });
      await until(() => survivor.getJob('hb-key-retry', retried), (s) => s === 'completed');
      await until(() => survivor.getJob('hb-key-final', fresh!), (s) => s === 'completed');
      expect(runs.map((r) => [r.id, r.attempt]).sort()).toEqual(
        [
          [retried, 2],
          [fresh, 1],
        ].sort(),
      );
      await until(() => failed.length === 1);
      expect(failed).toEqual([[last, expect.stringMatching(/^deadline exceeded: still active/)]]);
    } finally {
      await child.kill();
    }
  });
});
