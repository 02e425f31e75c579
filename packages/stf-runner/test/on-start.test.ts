/**
 * RunRequest.onStart (instant-run's audit entry): begun when the runtime has the run, so it overlaps the run; done
 * before the run's sql() writes commit and before the answer; not done for a run that was refused.
 */
import { StfError, StfRuntimeBusy } from '@wds/stf-runtime';
import { describe, expect, it } from 'vitest';
import { runAsUser } from '../src/index.js';
import { depsWith, fakeRuntime } from './fakes.js';

const workspace = { id: 'ws-1', ddl_policy_group_id: null, created_by: null };
const version = { stf_id: 'stf-1', runtime: 'javascript' as const, code: Buffer.from('return 1') };
const ok = { output: 1, logs: [], duration_ms: 1 };

/** An onStart that records when it began and when it finished. */
function recorder(fail?: Error) {
  const events: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    events,
    release,
    onStart: async () => {
      events.push('record begun');
      await gate;
      events.push('record done');
      if (fail) throw fail;
    },
  };
}

const run = (deps: ReturnType<typeof depsWith>, onStart: () => Promise<void>) =>
  runAsUser(deps, { workspace, userId: 'u', version, input: null, sources: {}, onStart });

describe('onStart', () => {
  it('begins when the runtime says the run started, runs alongside it, and is done before the answer', async () => {
    const r = recorder();
    const js = fakeRuntime(async (req) => {
      req.onStart?.();
      r.events.push('run going');
      r.release();
      await Promise.resolve();
      r.events.push('run done');
      return ok;
    });
    const answer = await run(depsWith({ javascript: js }), r.onStart);
    expect(answer.success).toBe(true);
    expect(r.events.slice(0, 2)).toEqual(['record begun', 'run going']);
    expect(r.events).toContain('record done');
  });

  it('is done after the run when the runtime never calls it, for an output and for a failure of the code', async () => {
    for (const behave of [async () => ok, async () => Promise.reject(new StfError('runtime', 'boom'))]) {
      const r = recorder();
      r.release();
      const js = fakeRuntime(async () => {
        r.events.push('run');
        return behave();
      });
      await run(depsWith({ javascript: js }), r.onStart);
      expect(r.events).toEqual(['run', 'record begun', 'record done']);
    }
  });

  it('is not done for a run the runtime refused', async () => {
    const r = recorder();
    r.release();
    const busy = fakeRuntime(async () => Promise.reject(new StfRuntimeBusy('too many')));
    await expect(run(depsWith({ javascript: busy }), r.onStart)).rejects.toMatchObject({ code: 'TOO_MANY_REQUESTS' });
    expect(r.events).toEqual([]);
  });

  it('its failure fails the call; a runtime failure after the start stands, with the started work finished first', async () => {
    const failing = recorder(new Error('audit write failed'));
    failing.release();
    const js = fakeRuntime(async (req) => {
      req.onStart?.();
      return ok;
    });
    await expect(run(depsWith({ javascript: js }), failing.onStart)).rejects.toThrow('audit write failed');

    const r = recorder();
    const crashing = fakeRuntime(async (req) => {
      req.onStart?.();
      setImmediate(r.release); // the record's write ends after the runner has seen the failure
      throw new Error('the JavaScript worker failed');
    });
    await expect(run(depsWith({ javascript: crashing }), r.onStart)).rejects.toThrow('the JavaScript worker failed');
    expect(r.events).toEqual(['record begun', 'record done']);
  });

  it("is done before the run's sql() writes commit; failing, it rolls them back (issue 29, point 1)", async () => {
    for (const fail of [undefined, new Error('audit write failed')]) {
      const r = recorder(fail);
      const deps = depsWith({
        javascript: fakeRuntime(async (req) => {
          req.onStart?.();
          await req.sql?.('INSERT INTO t (a) VALUES (1)');
          setImmediate(r.release); // the entry's write still going when the run has returned
          return ok;
        }),
      });
      const open = deps.sql.openSession;
      deps.sql.openSession = async (caller) => {
        const s = await open(caller);
        const end = (ok: boolean) => {
          r.events.push(ok ? 'commit' : 'rollback');
          return s.end(ok);
        };
        return { ...s, end };
      };
      const answer = run(deps, r.onStart);
      if (fail) await expect(answer).rejects.toThrow('audit write failed');
      else expect((await answer).success).toBe(true);
      expect(r.events).toEqual(['record begun', 'record done', fail ? 'rollback' : 'commit']);
    }
  });

  it('is begun once, however often the runtime calls it', async () => {
    const r = recorder();
    r.release();
    const js = fakeRuntime(async (req) => {
      req.onStart?.();
      req.onStart?.();
      return ok;
    });
    await run(depsWith({ javascript: js }), r.onStart);
    expect(r.events).toEqual(['record begun', 'record done']);
  });
});
