import { describe, expect, it } from 'vitest';
import { RateLimiter, addressKey, checkedWhenSpent, failureBudgetOf, forwardedAddress } from '../src/index.js';

/** A clock that moves only when told to. */
const manualClock = (start = 1_000_000) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
};

describe('RateLimiter', () => {
  it('allows a full bucket at once, then refuses with the wait until the next token', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 6, maxKeys: 100, now: clock.now });
    const taken = Array.from({ length: 6 }, () => l.take('a'));
    expect(taken.map((d) => [d.allowed, d.remaining])).toEqual([5, 4, 3, 2, 1, 0].map((n) => [true, n]));
    const refused = l.take('a');
    expect(refused).toMatchObject({ allowed: false, limit: 6, remaining: 0 });
    expect(refused.retryAfterMs).toBeCloseTo(10_000);
    expect(refused.resetMs).toBeCloseTo(60_000);
    expect(l.windowSeconds).toBe(60);
  });

  it('refills at the configured rate and is full again after the window', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 60, maxKeys: 100, now: clock.now });
    for (let i = 0; i < 60; i++) l.take('a');
    expect(l.take('a').allowed).toBe(false);
    clock.advance(999);
    expect(l.take('a').allowed).toBe(false);
    clock.advance(1);
    expect(l.take('a')).toMatchObject({ allowed: true, remaining: 0 });
    clock.advance(60_000);
    expect(l.take('a')).toMatchObject({ allowed: true, remaining: 59 });
  });

  it('a refused request charges nothing, and keys are independent', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 2, maxKeys: 100, now: clock.now });
    l.take('a');
    l.take('a');
    for (let i = 0; i < 100; i++) expect(l.take('a').allowed).toBe(false);
    expect(l.take('b')).toMatchObject({ allowed: true, remaining: 1 });
    clock.advance(30_000);
    expect(l.take('a')).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('honours a burst smaller than a minute of requests', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 600, burst: 10, maxKeys: 100, now: clock.now });
    for (let i = 0; i < 10; i++) expect(l.take('a').allowed).toBe(true);
    expect(l.take('a').allowed).toBe(false);
    expect(l.windowSeconds).toBe(1);
    clock.advance(100);
    expect(l.take('a').allowed).toBe(true);
  });

  it('a refund gives one request back, and a bucket refunded to full is forgotten', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 3, maxKeys: 100, now: clock.now });
    l.take('a');
    l.take('a');
    l.refund('a');
    expect(l.take('a').remaining).toBe(1);
    l.refund('a');
    l.refund('a');
    expect(l.size).toBe(0);
  });

  it('forgets keys whose bucket has refilled', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 60, maxKeys: 1_000, now: clock.now });
    for (let i = 0; i < 500; i++) l.take(`k${i}`);
    expect(l.size).toBe(500);
    clock.advance(61_000);
    // Each check drops the oldest remembered key once it is idle.
    for (let i = 0; i < 500; i++) l.take('busy');
    expect(l.size).toBe(1);
  });

  it('memory stays bounded under a flood of new keys, which share one overflow bucket and evict no active key', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 10, maxKeys: 1_000, now: clock.now });
    // A tenant that is busy (half its budget spent) when the flood starts.
    for (let i = 0; i < 5; i++) l.take('tenant');
    let allowed = 0;
    for (let i = 0; i < 200_000; i++) {
      if (l.take(`attacker-${i}`).allowed) allowed++;
      if (i % 1000 === 0) clock.advance(1);
    }
    expect(l.size).toBeLessThanOrEqual(1_000);
    // 999 remembered keys got a bucket each; everything past the cap shared one bucket of 10.
    expect(allowed).toBe(999 + 10);
    // The tenant's state survived: 5 left, not a fresh bucket and not wedged.
    expect(l.take('tenant')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('once idle entries exist, new keys take their place instead of the overflow bucket', () => {
    const clock = manualClock();
    const l = new RateLimiter({ perMinute: 60, maxKeys: 100, now: clock.now });
    for (let i = 0; i < 100; i++) l.take(`old-${i}`);
    clock.advance(60_000);
    for (let i = 0; i < 100; i++) expect(l.take(`new-${i}`)).toMatchObject({ allowed: true, remaining: 59 });
    expect(l.size).toBe(100);
  });
});

describe('addressKey', () => {
  it('keeps IPv4, unwraps IPv4-mapped IPv6 and budgets IPv6 per /64', () => {
    expect(addressKey('203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:DB8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });
});

describe('forwardedAddress', () => {
  it('believes only the hop the outermost trusted proxy wrote', () => {
    expect(forwardedAddress('10.0.0.1', 0)).toBeUndefined();
    expect(forwardedAddress('172.16.0.9, 198.51.100.77', 1)).toBe('198.51.100.77');
    expect(forwardedAddress('172.16.0.9, 198.51.100.77', 2)).toBe('172.16.0.9');
    expect(forwardedAddress('198.51.100.77', 2)).toBeUndefined();
    expect(forwardedAddress('not-an-ip', 1)).toBeUndefined();
    expect(forwardedAddress(undefined, 1)).toBeUndefined();
  });
});

describe('failure budgets (issue 28)', () => {
  const id = '01900000-0000-7000-8000-00000000abcd';
  it('charges a hook delivery to its hook (one key however its id is spelt), everything else to the address', () => {
    expect(failureBudgetOf('POST', `/api/v1/hooks/${id}`, '140.82.115.1')).toMatchObject({ kind: 'hook', key: id });
    expect(failureBudgetOf('POST', `/api/v1/hooks/${id.toUpperCase()}/`, '140.82.115.1')).toMatchObject({ kind: 'hook', key: id });
    expect(failureBudgetOf('POST', `/api/v1/hooks/${'x'.repeat(5000)}`, '1.2.3.4')).toMatchObject({ kind: 'hook', key: '?' });
    expect(failureBudgetOf('GET', `/api/v1/hooks/${id}`, '1.2.3.4')).toMatchObject({ kind: 'address', key: '1.2.3.4' });
    expect(failureBudgetOf('GET', '/api/v1/auth/me', '1.2.3.4')).toMatchObject({ kind: 'address', key: '1.2.3.4' });
  });

  it('once spent, checks what no one can guess and refuses an operator secret unchecked', () => {
    const address = failureBudgetOf('GET', '/api/v1/auth/me', '1.2.3.4');
    const hook = failureBudgetOf('POST', `/api/v1/hooks/${id}`, '1.2.3.4');
    const checked = (authorization: string | undefined, operatorSecret = false) => checkedWhenSpent(address, { authorization, operatorSecret });
    expect([checked('Bearer ses_x'), checked('Bearer svc_x'), checked('Bearer a.b.c'), checked(undefined)]).toEqual([true, true, true, true]);
    expect([checked('Bearer guess'), checked('Basic abc'), checked(undefined, true), checked('Bearer ses_x', true)]).toEqual([false, false, false, false]);
    expect(checkedWhenSpent(hook, { authorization: undefined, operatorSecret: false })).toBe(true);
  });
});
