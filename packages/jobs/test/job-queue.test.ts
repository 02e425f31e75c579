import '@wds/testkit';
import { describe, expect, it } from 'vitest';
import { type FailedJob, type Job, JobQueue } from '../src/index.js';
import { forever, gate, UUID, until, useJobQueues } from './helpers.js';

const queues = useJobQueues();

describe('lifecycle', () => {
  it('stopping before start, starting twice and stopping twice are harmless', async () => {
    const queue = queues.create();
    await queue.stop();
    await Promise.all([queue.start(), queue.start()]);
    await queue.start();

    await queue.register('life', async () => {}, { expireInSeconds: 5 });
    const id = await queue.enqueue('life', {});
    expect(id).toMatch(UUID);
    await until(() => queue.getJob('life', id!), (s) => s === 'completed');

    await Promise.all([queue.stop(), queue.stop({ graceful: false })]);
    await queue.stop();
    await expect(queue.enqueue('life', {})).rejects.toThrow(/stopped/);
    await expect(queue.start()).rejects.toThrow(/cannot start again/);
  });

  it('reports misuse instead of silently dropping jobs', async () => {
    const unstarted = queues.create();
    await expect(unstarted.enqueue('anything', {})).rejects.toThrow(/not started/);
    await expect(unstarted.register('anything', async () => {}, { expireInSeconds: 5 })).rejects.toThrow(/not started/);

    const queue = await queues.start();
    // pg-boss's send returns null for a queue that does not exist, which would read as "deduplicated".
    await expect(queue.enqueue('never-registered', {})).rejects.toThrow(/does not exist/);
    await expect(queue.register('bad', async () => {}, { expireInSeconds: 0 })).rejects.toThrow(/expireInSeconds/);
    await expect(queue.register('bad', async () => {}, { expireInSeconds: 5, concurrency: 0 })).rejects.toThrow(
      /concurrency/,
    );
    await expect(queue.register('bad name', async () => {}, { expireInSeconds: 5 })).rejects.toThrow(/queue name/);
    await queue.register('once', async () => {}, { expireInSeconds: 5 });
    await expect(queue.register('once', async () => {}, { expireInSeconds: 5 })).rejects.toThrow(/already registered/);
    expect(() => new JobQueue({ connectionString: queues.url, schema: 'Bad-Schema' })).toThrow(/schema/);
  });

  it('getJob answers null for unknown and malformed ids', async () => {
    const queue = await queues.start();
    await queue.register('lookup', async () => {}, { expireInSeconds: 5 });
    expect(await queue.getJob('lookup', '00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(await queue.getJob('lookup', 'not-a-uuid')).toBeNull();
  });

  it('keeps queues of another schema apart', async () => {
    const main = await queues.start();
    const other = await queues.start({ schema: 'jobs_other' });
    await main.register('schema-a', async () => {}, { expireInSeconds: 5 });
    await expect(other.enqueue('schema-a', {})).rejects.toThrow(/does not exist/);
  });
});

describe('running jobs', () => {
  it('runs a job once with its id, data and attempt; getJob follows it to completed', async () => {
    const queue = await queues.start();
    const runs: Job<{ fileId: string }>[] = [];
    await queue.register<{ fileId: string }>('embed', async (job) => void runs.push(job), { expireInSeconds: 5 });

    const id = await queue.enqueue('embed', { fileId: 'f1' });
    await until(() => queue.getJob('embed', id!), (s) => s === 'completed');
    expect(runs.map(({ id, data, attempt }) => ({ id, data, attempt }))).toEqual([
      { id, data: { fileId: 'f1' }, attempt: 1 },
    ]);
    expect(runs[0]!.signal.aborted).toBe(false);
  });

  it('runs at most `concurrency` jobs of a queue at once', async () => {
    const queue = await queues.start();
    const release = gate();
    let running = 0;
    let most = 0;
    await queue.register(
      'busy',
      async () => {
        running++;
        most = Math.max(most, running);
        await release.opened;
        running--;
      },
      { expireInSeconds: 30, concurrency: 2 },
    );
    const ids = await Promise.all([1, 2, 3, 4, 5].map((n) => queue.enqueue('busy', { n })));

    await until(() => running === 2);
    await queues.polls('busy', 3); // three polling rounds in which a third job could wrongly start
    const states = await Promise.all(ids.map((id) => queue.getJob('busy', id!)));
    expect(states.filter((s) => s === 'active')).toHaveLength(2);
    expect(states.filter((s) => s === 'created')).toHaveLength(3);

    release.open();
    await until(
      () => Promise.all(ids.map((id) => queue.getJob('busy', id!))),
      (all) => all.every((s) => s === 'completed'),
    );
    expect(most).toBe(2);
  });
});

describe('failures', () => {
  it('a throwing handler is retried up to retryLimit, then onFailed gets the last error once', async () => {
    const queue = await queues.start();
    const attempts = new Map<string, number[]>();
    const failed: [FailedJob<{ failures: number }>, string][] = [];
    await queue.register<{ failures: number }>(
      'flaky',
      async (job) => {
        attempts.set(job.id, [...(attempts.get(job.id) ?? []), job.attempt]);
        if (job.attempt <= job.data.failures) throw new Error(`boom on attempt ${job.attempt}`);
      },
      { expireInSeconds: 5, retryLimit: 2, onFailed: async (job, message) => void failed.push([job, message]) },
    );

    const doomed = await queue.enqueue('flaky', { failures: 99 });
    const recovers = await queue.enqueue('flaky', { failures: 1 });

    await until(() => failed.length === 1);
    expect(failed[0]).toEqual([{ id: doomed, data: { failures: 99 } }, 'boom on attempt 3']);
    expect(attempts.get(doomed!)).toEqual([1, 2, 3]);
    expect(await queue.getJob('flaky', doomed!)).toBe('failed');

    await until(() => queue.getJob('flaky', recovers!), (s) => s === 'completed');
    expect(attempts.get(recovers!)).toEqual([1, 2]);

    // Five polling rounds of the queue and of its dead-letter queue: no further attempt, no second onFailed.
    await Promise.all([queues.polls('flaky', 5), queues.polls('flaky__failed', 5)]);
    expect(attempts.get(doomed!)).toEqual([1, 2, 3]);
    expect(failed).toHaveLength(1);
  });

  it('an onFailed that throws is delivered again', async () => {
    const queue = await queues.start();
    const deliveries: string[] = [];
    await queue.register(
      'failed-twice',
      async () => {
        throw new Error('always');
      },
      {
        expireInSeconds: 5,
        retryLimit: 1,
        onFailed: async (job, message) => {
          deliveries.push(`${job.id} ${message}`);
          if (deliveries.length === 1) throw new Error('status table unavailable');
        },
      },
    );
    const id = await queue.enqueue('failed-twice', {});
    await until(() => deliveries.length === 2);
    // The second delivery still carries the job's own failure, not onFailed's.
    expect(deliveries).toEqual([`${id} always`, `${id} always`]);
    expect(queues.takeErrors()).toEqual(['onFailed of queue failed-twice failed: status table unavailable']);
  });

  it('a handler past its deadline is aborted and retried, then onFailed says so', async () => {
    const queue = await queues.start();
    const runs: Job<unknown>[] = [];
    const failed: string[] = [];
    await queue.register(
      'slow',
      async (job) => {
        runs.push(job);
        await forever();
      },
      { expireInSeconds: 1, retryLimit: 1, onFailed: async (_job, message) => void failed.push(message) },
    );

    const started = Date.now();
    const id = await queue.enqueue('slow', {});
    await until(() => failed.length === 1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000); // two attempts of one second each
    expect(failed).toEqual(['deadline exceeded: not finished within 1 s']);
    expect(runs.map((r) => [r.id, r.attempt, r.signal.aborted])).toEqual([
      [id, 1, true],
      [id, 2, true],
    ]);
    expect(await queue.getJob('slow', id!)).toBe('failed');
  });
});

describe('singletonKey', () => {
  it('returns null while a job with the key is queued and while it is active, and only then', async () => {
    const queue = await queues.start();
    const started: string[] = [];
    const finish = new Map<string, () => void>();
    await queue.register<{ drive: string }>(
      'sync',
      (job) =>
        new Promise<void>((resolve) => {
          started.push(job.data.drive);
          finish.set(job.data.drive, resolve);
        }),
      { expireInSeconds: 30, concurrency: 1 },
    );
    const syncDrive1 = () => queue.enqueue('sync', { drive: 'd1' }, { singletonKey: 'drive-1' });

    // Occupy the only slot so that the keyed job stays queued.
    await queue.enqueue('sync', { drive: 'blocker' });
    await until(() => started.includes('blocker'));
    const first = await syncDrive1();
    expect(first).toMatch(UUID);
    expect(await queue.getJob('sync', first!)).toBe('created');
    expect(await syncDrive1()).toBeNull();
    expect(await queue.enqueue('sync', { drive: 'd2' }, { singletonKey: 'drive-2' })).toMatch(UUID);

    finish.get('blocker')!();
    await until(() => started.includes('d1'));
    expect(await queue.getJob('sync', first!)).toBe('active');
    expect(await syncDrive1()).toBeNull(); // a second sync while one runs does not start twice

    finish.get('d1')!();
    await until(() => queue.getJob('sync', first!), (s) => s === 'completed');
    const next = await syncDrive1();
    expect(next).toMatch(UUID);
    expect(next).not.toBe(first);
    expect(started.filter((d) => d === 'd1')).toEqual(['d1']);
  });

  it('returns null while the keyed job waits for a retry', async () => {
    const queue = await queues.start();
    await queue.register(
      'sync-retry',
      async () => {
        throw new Error('provider down');
      },
      { expireInSeconds: 5, retryLimit: 3, retryDelaySeconds: 60 },
    );
    const first = await queue.enqueue('sync-retry', {}, { singletonKey: 'drive-1' });
    await until(() => queue.getJob('sync-retry', first!), (s) => s === 'retry');
    expect(await queue.enqueue('sync-retry', {}, { singletonKey: 'drive-1' })).toBeNull();
  });

  it('lets one of many simultaneous enqueues of a key through; jobs without a key are never merged', async () => {
    const queue = await queues.start();
    await queue.register('burst', forever, { expireInSeconds: 30 });
    const keyed = await Promise.all(
      Array.from({ length: 8 }, () => queue.enqueue('burst', {}, { singletonKey: 'same' })),
    );
    expect(keyed.filter((id) => id !== null)).toHaveLength(1);

    const keyless = await Promise.all([queue.enqueue('burst', {}), queue.enqueue('burst', {})]);
    expect(keyless.every((id) => id !== null && UUID.test(id))).toBe(true);
    expect(new Set(keyless).size).toBe(2);
  });
});
