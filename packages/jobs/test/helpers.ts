import '@wds/testkit';
import { readdirSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDatabase } from '@wds/testkit';
import { afterEach, beforeAll, expect, inject } from 'vitest';
import { JobQueue, type JobQueueOptions } from '../src/index.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Short intervals so that retries, deadlines and crash recovery happen within seconds. */
export const FAST = { pollingIntervalSeconds: 0.2, maintenanceIntervalSeconds: 1 } as const;

/**
 * One database per test file; every JobQueue a test starts is stopped after it, and any error a queue reported
 * through onError fails the test.
 */
export function useJobQueues() {
  const ctx = { url: '' };
  const open: JobQueue[] = [];
  let reported: Error[] = [];
  /** Polling rounds per queue and maintenance runs, over every JobQueue of the test (JobQueueOptions.onPolled/onMaintained). */
  const polled = new Map<string, number>();
  let maintained = 0;

  beforeAll(async () => {
    ctx.url = await createDatabase(inject('pgServerUrl'), { prefix: 'jobs' });
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((q) => q.stop({ graceful: false })));
    const errors = reported;
    reported = [];
    polled.clear();
    maintained = 0;
    expect(errors.map((e) => e.message)).toEqual([]);
  });

  return {
    get url() {
      return ctx.url;
    },
    /** A JobQueue on the test database, not started. */
    create(opts: Partial<JobQueueOptions> = {}): JobQueue {
      const queue = new JobQueue({
        connectionString: ctx.url,
        ...FAST,
        onError: (e) => reported.push(e),
        onPolled: (name) => polled.set(name, (polled.get(name) ?? 0) + 1),
        onMaintained: () => maintained++,
        ...opts,
      });
      open.push(queue);
      return queue;
    },
    /** The errors reported so far, which then no longer fail the test. */
    takeErrors(): string[] {
      return reported.splice(0).map((e) => e.message);
    },
    /** Resolves once `queue` has gone round its polling loop `n` more times (rounds in which something must not happen). */
    async polls(queue: string, n: number): Promise<void> {
      const target = (polled.get(queue) ?? 0) + n;
      await until(() => (polled.get(queue) ?? 0) >= target);
    },
    /** Resolves once pg-boss's maintenance has run `n` more times (each at least maintenanceIntervalSeconds apart). */
    async maintenance(n: number): Promise<void> {
      const target = maintained + n;
      await until(() => maintained >= target);
    },
    async start(opts: Partial<JobQueueOptions> = {}): Promise<JobQueue> {
      const queue = this.create(opts);
      await queue.start();
      return queue;
    },
  };
}

/** Polls `probe` until `ok` holds for its value; fails with the last value after `timeoutMs`. */
export async function until<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean = Boolean,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > end) {
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    }
    await sleep(50);
  }
}

/** A promise a test resolves when it wants a handler to finish. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** Never settles: a handler that hangs. */
export const forever = (): Promise<void> => new Promise(() => {});

/** The crash tests run the built package in a child process; refuse to test an older build than the source. */
export function assertDistIsFresh(): void {
  const newest = (dir: string, ext: string) => {
    const url = new URL(`../${dir}/`, import.meta.url);
    const times = readdirSync(url)
      .filter((f) => f.endsWith(ext))
      .map((f) => statSync(new URL(f, url)).mtimeMs);
    return times.length ? Math.max(...times) : 0;
  };
  let built = 0;
  try {
    built = newest('dist', '.js');
  } catch {
    // no dist yet
  }
  if (built < newest('src', '.ts')) {
    throw new Error('dist/ is missing or older than src/: run `pnpm --filter @wds/jobs build` before this test');
  }
}
