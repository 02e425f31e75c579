// Issue 29: an effect's Idempotency-Key is a function of what the delivery is (the run's origin and the step), so a
// retry of the same delivery carries the same key, and no two deliveries, workflows or workspaces share one.
import { describe, expect, it } from 'vitest';
import { effectIdempotencyKey, originOf, runOrigin } from '../src/index.js';

const base = {
  workspaceId: '01900000-0000-7000-8000-00000000000a',
  workflowId: '01900000-0000-7000-8000-00000000000b',
  origin: runOrigin.event('01900000-0000-7000-8000-0000000000e1'),
  step: 0,
  effectId: '01900000-0000-7000-8000-0000000000ef',
};

describe('effectIdempotencyKey', () => {
  it('is the same for a retry of the same delivery, whatever run or attempt carries it', () => {
    expect(effectIdempotencyKey({ ...base })).toBe(effectIdempotencyKey({ ...base }));
    // Nothing of a run id or an attempt goes into it: an event's second run, a resumed attempt, give the same key.
    expect(effectIdempotencyKey(base)).toMatch(/^wds-[0-9a-f]{64}$/);
    const tick = new Date('2026-01-02T03:04:05.000Z');
    expect(effectIdempotencyKey({ ...base, origin: runOrigin.schedule('s-1', tick) })).toBe(
      effectIdempotencyKey({ ...base, origin: runOrigin.schedule('s-1', new Date(tick.getTime())) }),
    );
  });

  it('differs for another delivery, step, effect, workflow or workspace', () => {
    const keys = [
      base,
      { ...base, origin: runOrigin.event('01900000-0000-7000-8000-0000000000e2') }, // another event on the same row
      { ...base, step: 1 },
      { ...base, effectId: '01900000-0000-7000-8000-0000000000f0' },
      { ...base, workflowId: '01900000-0000-7000-8000-00000000000c' },
      { ...base, workspaceId: '01900000-0000-7000-8000-00000000000d' },
      { ...base, origin: runOrigin.schedule('s-1', new Date('2026-01-02T03:04:05.000Z')) },
      { ...base, origin: runOrigin.schedule('s-1', new Date('2026-01-02T03:04:06.000Z')) }, // the next tick
      { ...base, origin: runOrigin.webhook('h-1', 'id:delivery-1') },
      { ...base, origin: runOrigin.webhook('h-1', 'id:delivery-2') },
      { ...base, origin: runOrigin.webhook('h-2', 'id:delivery-1') }, // the same sender id at another hook
      { ...base, origin: runOrigin.run('async', 'r-1') },
      { ...base, origin: runOrigin.run('request', 'r-1') },
      { ...base, origin: runOrigin.run('async', 'r-2') },
    ].map(effectIdempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('parts cannot be shifted into one another (a separator inside an id makes no other key)', () => {
    const a = effectIdempotencyKey({ ...base, workspaceId: 'a:b', workflowId: 'c' });
    const b = effectIdempotencyKey({ ...base, workspaceId: 'a', workflowId: 'b:c' });
    expect(a).not.toBe(b);
  });

  it('is printable ASCII without spaces, and carries none of its parts', () => {
    const key = effectIdempotencyKey({ ...base, origin: runOrigin.webhook('h-1', 'id:ORDER secret=hunter2 ü') });
    expect(key).toMatch(/^[\x21-\x7e]+$/);
    for (const part of ['hunter2', 'ORDER', base.workspaceId, base.workflowId]) expect(key).not.toContain(part);
  });

  it('a run recorded before origins were kept is its own origin', () => {
    expect(originOf({ id: 'r-1', origin: null })).toBe('run:r-1');
    expect(originOf({ id: 'r-1', origin: 'event:e-1' })).toBe('event:e-1');
  });
});
