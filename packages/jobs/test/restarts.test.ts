import '@wds/testkit';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import PgBoss from 'pg-boss';
import type { Job } from '../src/index.js';
import { assertDistIsFresh, forever, gate, until, useJobQueues } from './helpers.js';

const queues = useJobQueues();

describe('restarts', () => {
  it('a job whose process was killed mid-run is retried by another instance after its deadline', async () => {
    assertDistIsFresh();
    // The first instance runs in its own process, killed with SIGKILL: no stop(), no cleanup of any kind.
    const child = spawn(process.execPath, [fixture('hanging-worker.mjs'), queues.url], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const startedAt = new Map<string, number>();
    let ready = false;
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line === 'ready') ready = true;
      else startedAt.set(JSON.parse(line).started, Date.now());
    });

    try {
      await until(() => ready || child.exitCode !== null);
      expect(child.exitCode).toBeNull();
      // This instance only enqueues for now, so the child is the one that takes both jobs.
      const survivor = await queues.start();
      const retried = (await survivor.enqueue('crash-retry', { n: 1 }))!;
      const last = (await survivor.enqueue('crash-final', { n: 2 }))!;
      await until(() => startedAt.has(retried) && startedAt.has(last));

      child.kill('SIGKILL');
      await exited;
      expect(await survivor.getJob('crash-retry', retried)).toBe('active');
      expect(await survivor.getJob('crash-final', last)).toBe('active');

      const runs: Job<unknown>[] = [];
      const failed: unknown[] = [];
      await survivor.register('crash-retry', async (job) => void runs.push(job), {
        expireInSeconds: 3,
        retryLimit: 1,
      });
      await survivor.register('crash-final', async (job) => void runs.push(job), {
        expireInSeconds: 3,
        retryLimit: 0,
        onFailed: async (job, message) => void failed.push([job, message]),
      });

      await until(() => survivor.getJob('crash-retry', retried), (s) => s === 'completed');
      // Recovered by expiry at its 3 s deadline, not earlier (the bound allows for reading the child's output late).
      expect(Date.now() - startedAt.get(retried)!).toBeGreaterThanOrEqual(2000);
      expect(runs.map((r) => [r.id, r.attempt, r.data])).toEqual([[retried, 2, { n: 1 }]]);

      // The last attempt died with the process: failed by maintenance, and onFailed still hears of it.
      await until(() => failed.length === 1);
      expect(failed).toEqual([
        [{ id: last, data: { n: 2 } }, expect.stringMatching(/^deadline exceeded: still active/)],
      ]);
      expect(await survivor.getJob('crash-final', last)).toBe('failed');
      expect(runs).toHaveLength(1);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('stop({ graceful: false }) fails the running attempt at once, and another instance retries it', async () => {
    const first = await queues.start();
    const runs: Job<unknown>[] = [];
    const opts = { expireInSeconds: 60, retryLimit: 1 };
    await first.register('interrupted', async (job) => {
      runs.push(job);
      await forever();
    }, opts);
    const id = (await first.enqueue('interrupted', { n: 1 }))!;
    await until(() => runs.length === 1);

    await first.stop({ graceful: false });
    expect(runs[0]!.signal.aborted).toBe(true);

    const second = await queues.start();
    expect(await second.getJob('interrupted', id)).toBe('retry'); // at once, not after the 60 s deadline
    await second.register('interrupted', async (job) => void runs.push(job), opts);
    await until(() => second.getJob('interrupted', id), (s) => s === 'completed');
    expect(runs.map((r) => [r.id, r.attempt])).toEqual([
      [id, 1],
      [id, 2],
    ]);
  });

  it('an interrupted attempt does not use up the job\'s attempts: with retryLimit 0 it is still retried', async () => {
    const first = await queues.start();
    const runs: Job<unknown>[] = [];
    const opts = { expireInSeconds: 60, retryLimit: 0 };
    await first.register('interrupted-last', async (job) => {
      runs.push(job);
      await forever();
    }, opts);
    const id = (await first.enqueue('interrupted-last', { n: 1 }))!;
    await until(() => runs.length === 1);
    await first.stop({ graceful: false });

    const second = await queues.start();
    expect(await second.getJob('interrupted-last', id)).toBe('retry'); // not failed: the shutdown said nothing about it
    await second.register('interrupted-last', async (job) => void runs.push(job), opts);
    await until(() => second.getJob('interrupted-last', id), (s) => s === 'completed');
    expect(runs).toHaveLength(2);
  });

  it('a graceful stop lets the running job finish, and interrupts it once timeoutMs has passed', async () => {
    const observer = await queues.start();
    const opts = { expireInSeconds: 60, retryLimit: 1 };

    const patient = await queues.start();
    const finish = gate();
    const events: string[] = [];
    const graceful: Job<unknown>[] = [];
    await patient.register('graceful', async (job) => {
      graceful.push(job);
      await finish.opened;
      events.push('finished');
    }, opts);
    const finishes = (await patient.enqueue('graceful', {}))!;
    await until(() => graceful.length === 1);
    const stopped = patient.stop({ graceful: true, timeoutMs: 10_000 }).then(() => events.push('stopped'));
    finish.open(); // the handler finishes while the queue is stopping
    await stopped;
    expect(events).toEqual(['finished', 'stopped']);
    expect(graceful[0]!.signal.aborted).toBe(false);
    expect(await observer.getJob('graceful', finishes)).toBe('completed');

    const impatient = await queues.start();
    const runs: Job<unknown>[] = [];
    await impatient.register('graceful-timeout', async (job) => {
      runs.push(job);
      await forever();
    }, opts);
    const hangs = (await impatient.enqueue('graceful-timeout', {}))!;
    await until(() => runs.length === 1);
    const stopping = Date.now();
    await impatient.stop({ graceful: true, timeoutMs: 300 });
    expect(Date.now() - stopping).toBeGreaterThanOrEqual(300);
    // Interrupted by the stop at its timeout (an AbortError), not by the attempt's 60 s deadline (a TimeoutError).
    expect(runs[0]!.signal.aborted).toBe(true);
    expect((runs[0]!.signal.reason as Error).name).toBe('AbortError');
    expect(await observer.getJob('graceful-timeout', hangs)).toBe('retry');
  });
});

describe('settling', () => {
  it('an attempt that finishes after its job moved on does not settle the retry that replaced it', async () => {
    const opts = { expireInSeconds: 60, retryLimit: 1 };
    const late = await queues.start();
    const first = gate();
    const runs: Job<unknown>[] = [];
    await late.register('fenced', async (job) => {
      runs.push(job);
      await first.opened;
    }, opts);
    const id = (await late.enqueue('fenced', {}))!;
    await until(() => runs.length === 1);

    // What maintenance does to an attempt past its deadline, while the late handler is still running.
    const boss = new PgBoss({ connectionString: queues.url, schedule: false, supervise: false });
    await boss.start();
    try {
      await boss.fail('fenced', id, { message: 'expired' });
    } finally {
      await boss.stop({ graceful: false });
    }
    const other = await queues.start();
    const second = gate();
    await other.register('fenced', async (job) => {
      runs.push(job);
      await second.opened;
    }, opts);
    await until(() => runs.length === 2);

    first.open(); // attempt 1 completes late: it must not complete attempt 2, still running
    await late.stop({ graceful: true }); // waits until attempt 1 has finished settling
    expect(await other.getJob('fenced', id)).toBe('active');
    second.open();
    await until(() => other.getJob('fenced', id), (s) => s === 'completed');
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
  });
});

function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
}
