import { describe, expect, it } from 'vitest';
import { Maintenance } from '../src/index.js';
import { gate, until } from './helpers.js';

describe('Maintenance', () => {
  it('runs each task at start and then again on its interval; a failure is reported and the task keeps its turn', async () => {
    let runs = 0;
    let failures = 0;
    const results: [string, number][] = [];
    const errors: [string, string][] = [];
    const m = new Maintenance({
      tasks: [
        { name: 'counts', intervalMs: 5, run: async () => ++runs },
        {
          name: 'fails first',
          intervalMs: 5,
          run: async () => {
            if (++failures === 1) throw new Error('database away');
            return 0;
          },
        },
      ],
      onResult: (task, n) => results.push([task, n]),
      onError: (task, err) => errors.push([task, err.message]),
    });
    m.start();
    m.start(); // harmless
    await until(() => runs >= 3 && failures >= 3);
    await m.stop();
    expect(results.slice(0, 2)).toEqual([
      ['counts', 1],
      ['counts', 2],
    ]);
    expect(errors).toEqual([['fails first', 'database away']]);
  });

  it('a task never overlaps itself, and stop aborts the sweep under way and waits for it', async () => {
    let active = 0;
    let most = 0;
    let calls = 0;
    const release = gate();
    let aborted = false;
    const m = new Maintenance({
      tasks: [
        {
          name: 'slow',
          intervalMs: 1,
          run: async (signal) => {
            calls++;
            active++;
            most = Math.max(most, active);
            if (calls === 2) {
              await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
              aborted = signal.aborted;
            } else if (calls === 1) {
              await release.opened;
            }
            active--;
          },
        },
      ],
      onError: () => {},
    });
    m.start();
    await until(() => calls === 1);
    release.open();
    await until(() => calls === 2);
    await m.stop();
    expect(aborted).toBe(true);
    expect(active).toBe(0);
    expect(most).toBe(1);
    expect(calls).toBe(2);
  });

  it('runOnce sweeps every task once and waits', async () => {
    const seen: string[] = [];
    const m = new Maintenance({
      tasks: ['a', 'b'].map((name) => ({ name, intervalMs: 60_000, run: async () => void seen.push(name) })),
    });
    await m.runOnce();
    expect(seen.sort()).toEqual(['a', 'b']);
    await m.stop();
  });
});
