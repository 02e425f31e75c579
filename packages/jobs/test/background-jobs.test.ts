import '@wds/testkit';
import { createDatabase } from '@wds/testkit';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { BackgroundJobs, type JobLogger } from '../src/index.js';
import { until } from './helpers.js';

let url = '';
const open: BackgroundJobs[] = [];
beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'background' });
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((b) => b.stop()));
});

/** A BackgroundJobs on the test database, with the log lines it wrote. */
function background(work = true): { jobs: BackgroundJobs; lines: { level: string; msg: string; fields: object }[] } {
  const lines: { level: string; msg: string; fields: object }[] = [];
  const logger: JobLogger = {
    info: (fields, msg) => void lines.push({ level: 'info', msg, fields }),
    warn: (fields, msg) => void lines.push({ level: 'warn', msg, fields }),
  };
  const jobs = new BackgroundJobs({ connectionString: url, pollIntervalMs: 1000, logger, work });
  open.push(jobs);
  return { jobs, lines };
}

describe('BackgroundJobs', () => {
  it('starts on the first enqueue, runs the handler and logs how the job ended', async () => {
    const { jobs, lines } = background();
    const seen: unknown[] = [];
    jobs.handle('lazy', async ({ data, attempt }) => void seen.push({ data, attempt }), { concurrency: 1, expireInSeconds: 30, retryLimit: 0 });
    expect(await jobs.enqueue('lazy', { n: 1 }, 'key')).toBe(true);
    await until(() => seen.length === 1);
    expect(seen).toEqual([{ data: { n: 1 }, attempt: 1 }]);
    await until(() => lines.some((l) => l.msg === 'job done'));
    expect(lines.find((l) => l.msg === 'job done')).toMatchObject({ level: 'info', fields: { queue: 'lazy', attempt: 1 } });
  });

  it('without work only declares its queues: its jobs are run by a process that works them', async () => {
    const declaring = background(false);
    const working = background(true);
    const ranBy: string[] = [];
    const opts = { concurrency: 1, expireInSeconds: 30, retryLimit: 0 };
    declaring.jobs.handle('shared', async () => void ranBy.push('declaring'), opts);
    working.jobs.handle('shared', async () => void ranBy.push('working'), opts);
    await working.jobs.start();
    expect(await declaring.jobs.enqueue('shared', {})).toBe(true);
    await until(() => ranBy.length === 1);
    expect(ranBy).toEqual(['working']);
  });

  it('logs a failed attempt and hands the data to onFailed after the last one', async () => {
    const { jobs, lines } = background();
    const failed: unknown[] = [];
    jobs.handle(
      'failing',
      async () => {
        throw new Error('no luck');
      },
      { concurrency: 1, expireInSeconds: 30, retryLimit: 0, onFailed: async (data, message) => void failed.push({ data, message }) },
    );
    await jobs.enqueue('failing', { n: 2 });
    await until(() => failed.length === 1);
    expect(failed[0]).toMatchObject({ data: { n: 2 }, message: expect.stringContaining('no luck') });
    expect(lines.find((l) => l.msg === 'job attempt failed')).toMatchObject({ level: 'warn', fields: { queue: 'failing', attempt: 1, err: 'no luck' } });
  });

  it('refuses to start again once stopped, even if it never started', async () => {
    const { jobs } = background();
    await jobs.stop();
    await expect(jobs.enqueue('after', {})).rejects.toThrow(/stopped/);
  });
});
