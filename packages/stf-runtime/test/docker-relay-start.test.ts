/**
 * startRelay's failure paths, against a stand-in for the engine's client (the relay's own behaviour in a real
 * engine is covered by docker-origin.test.ts): the relay exits, or the deadline passes, while the request that
 * starts it is still out — the run fails with that error, and nothing is left as an unhandled rejection.
 */
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type EngineClient, EngineError } from '../src/docker/engine.js';
import { RELAY_READY, startRelay } from '../src/docker/relay.js';

/** One frame of the engine's multiplexed attach stream. */
const frame = (stream: 1 | 2, text: string) => {
  const body = Buffer.from(text);
  const head = Buffer.alloc(8);
  head[0] = stream;
  head.writeUInt32BE(body.length, 4);
  return Buffer.concat([head, body]);
};

/** An engine whose start request stays out until the test calls `answer()`; `answered` settles after it returned. */
function fakeEngine(opts: { onStart?: (s: PassThrough) => void } = {}) {
  const stream = new PassThrough();
  let answer!: () => void;
  const gate = new Promise<void>((r) => (answer = r));
  let returned!: () => void;
  const answered = new Promise<void>((r) => (returned = r));
  const engine = {
    attach: async () => stream,
    request: async () => {
      opts.onStart?.(stream);
      await gate;
      setImmediate(returned); // after what startRelay does with the late answer
      return { status: 204, body: undefined };
    },
  } as unknown as EngineClient;
  return { engine, stream, answer, answered };
}

let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on('unhandledRejection', onUnhandled);
});
afterEach(() => {
  process.off('unhandledRejection', onUnhandled);
});

describe('startRelay', () => {
  it('resolves once the relay prints its ready line', async () => {
    const { engine, answer } = fakeEngine({ onStart: (s) => s.write(frame(1, `${RELAY_READY}\n`)) });
    answer();
    const relay = await startRelay(engine, 'r1', Date.now() + 5_000, () => new Error('deadline'));
    relay.release();
  });

  it('fails with the exit when the relay ends before it is ready, even while the start request is out', async () => {
    // The start request comes back once the relay's stream has closed (startRelay heard it first: its listener is older).
    const { engine, answer, answered } = fakeEngine({
      onStart: (s) => {
        s.once('close', () => answer());
        s.end(frame(2, 'node: not found\n'));
        s.resume();
      },
    });
    const err = await startRelay(engine, 'r2', Date.now() + 5_000, () => new Error('deadline')).catch((e) => e);
    expect(err).toBeInstanceOf(EngineError);
    expect(err.message).toMatch(/exited before it was ready: node: not found/);
    await answered;
    expect(unhandled).toEqual([]);
  });

  it('fails with the deadline when it passes while the start request is out', async () => {
    const { engine, answer, answered } = fakeEngine();
    // The start request comes back right after the deadline has passed.
    const passed = () => {
      answer();
      return new Error('deadline');
    };
    const err = await startRelay(engine, 'r3', Date.now() + 10, passed).catch((e) => e);
    expect(err.message).toBe('deadline');
    await answered;
    expect(unhandled).toEqual([]);
  });
});
