import type { Db } from '@wds/db';
import type { StfRunRequest, StfRunResult, StfRuntime } from '@wds/stf-runtime';
import type { SqlCaller, SqlSession } from '@wds/workspace-sql';
import type { StfRunnerConfig, StfRunnerDeps } from '../src/index.js';

export const config: StfRunnerConfig = {
  SQL_STATEMENT_TIMEOUT_MS: 1_000,
  SQL_MAX_ROWS: 10,
  STF_TIMEOUT_MS: 2_000,
  STF_DOCKER_TIMEOUT_MS: 30_000,
  STF_DOCKER_MEMORY_MB: 128,
  STF_MAX_CODE_BYTES: 64,
};

/** A runtime that hands each request to `behave` and remembers it. */
export function fakeRuntime(behave: (req: StfRunRequest) => Promise<StfRunResult>): StfRuntime & { requests: StfRunRequest[] } {
  const requests: StfRunRequest[] = [];
  return {
    requests,
    run: (req) => {
      requests.push(req);
      return behave(req);
    },
    close: async () => {},
  };
}

/** Workspace SQL that records the sessions it opens, their statements and how they ended. */
export function fakeSql() {
  const sessions: { caller: SqlCaller; queries: string[]; ended?: boolean }[] = [];
  return {
    sessions,
    openSession: async (caller: SqlCaller): Promise<SqlSession> => {
      const s: (typeof sessions)[number] = { caller, queries: [] };
      sessions.push(s);
      return {
        query: async (q) => {
          s.queries.push(q);
          return [{ n: s.queries.length }];
        },
        end: async (ok) => {
          s.ended ??= ok;
        },
      };
    },
  };
}

/** No test here reads the platform tables: a database that refuses to be used. */
export const noDb = new Proxy({}, { get: () => { throw new Error('the database is not used here'); } }) as Db;

export function depsWith(runtimes: StfRunnerDeps['runtimes'], sql = fakeSql()): StfRunnerDeps & { sql: ReturnType<typeof fakeSql> } {
  return { db: noDb, sql, runtimes, secrets: undefined, config };
}
