import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, StfError } from '../src/index.js';

describe('StfError', () => {
  it('carries its kind, details and the logs captured before the failure', () => {
    const e = new StfError('timeout', 'The STF ran longer than 5000 ms', 'limit: timeoutMs', [{ level: 'log', message: 'started' }]);
    expect(e).toBeInstanceOf(Error);
    expect([e.kind, e.message, e.details, e.logs]).toEqual(['timeout', 'The STF ran longer than 5000 ms', 'limit: timeoutMs', [{ level: 'log', message: 'started' }]]);
  });

  it('default limits are within what docs/stfs.md#the-docker-runtime allows', () => {
    expect(DEFAULT_LIMITS.maxOutputBytes).toBeLessThanOrEqual(10 * 1024 * 1024);
    expect(DEFAULT_LIMITS.timeoutMs).toBeLessThanOrEqual(300_000);
  });
});
