import { describe, expect, it } from 'vitest';
import { isConnectionLost } from '../src/connection-errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isConnectionLost', () => {
  it('recognises a server gone away, a cut or refused connection', () => {
    for (const err of [
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P02'),
      withCode('57P03', 'the database system is starting up'),
      withCode('08006'),
      withCode('53300', 'sorry, too many clients already'),
      withCode('ECONNRESET'),
      withCode('ECONNREFUSED'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('timeout exceeded when trying to connect'),
      new AggregateError([withCode('ECONNREFUSED')], ''),
    ]) {
      expect([err.message, isConnectionLost(err)]).toEqual([err.message, true]);
    }
  });

  it('leaves statement errors and failures of other connections alone', () => {
    for (const err of [
      withCode('23505', 'duplicate key value violates unique constraint'),
      withCode('57014', 'canceling statement due to statement timeout'),
      withCode('42P01', 'relation "x" does not exist'),
      withCode('08P01', 'bind message supplies 70000 parameters'),
      new TypeError('fetch failed', { cause: withCode('ECONNREFUSED') }),
      new Error('boom'),
      undefined,
      'Connection terminated',
    ]) {
      expect(isConnectionLost(err)).toBe(false);
    }
  });
});
