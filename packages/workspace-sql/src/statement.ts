import { ServiceError } from '@wds/errors';
import { type Filter, type Subject, compileFilter, decide, describeDenial } from '@wds/policy-engine';
import { type Analysis, type Catalog, type FilterFn, analyze, loadParser, rewrite } from '@wds/sql-rewriter';
import type { SqlContext } from './context.js';
import type { AnalysisWorker } from './offload.js';

/** Statements longer than this are analysed and rewritten in the analysis worker, off the event loop. */
export const OFFLOAD_BYTES = 32 * 1024;

/** The policy filter of each (table, operation) a statement needs, by `table:operation`; null lets every row through. */
export type Decisions = Record<string, Filter | null>;

export interface RewriteInput {
  workspaceId: string;
  catalog: Catalog;
  /** Absent: no policy predicates (preview without policies). */
  decisions?: Decisions;
  userId: string | null;
}

/** What the service needs to know about an analysed statement; the statement itself stays where it was analysed. */
export type StatementSummary = Pick<Analysis, 'kind' | 'writes' | 'returning' | 'tables' | 'access'>;

/** One analysed statement that can be rewritten any number of times, until released. */
export interface AnalysedStatement extends StatementSummary {
  rewrite(input: RewriteInput): Promise<string>;
  release(): void;
}

export const summarize = (a: Analysis): StatementSummary => ({
  kind: a.kind,
  writes: a.writes,
  returning: a.returning,
  tables: a.tables,
  access: a.access,
});

/**
 * Analyses `sql`: in this thread when it is short (microseconds), in the analysis worker when it is long (a
 * statement near the 1 MiB limit costs seconds of CPU, which would stall every other tenant's requests).
 */
export async function analyseStatement(sql: string, workspaceId: string, worker: AnalysisWorker | undefined): Promise<AnalysedStatement> {
  if (worker && sql.length > OFFLOAD_BYTES / 4 && Buffer.byteLength(sql) > OFFLOAD_BYTES) return worker.analyse(sql, workspaceId);
  await loadParser(); // at once, unless an earlier statement broke a parser instance (then a fresh one)
  const a = analyze(sql);
  return { ...summarize(a), rewrite: async (input) => rewriteWith(a, input), release: () => {} };
}

/** rewrite() with the policy filters of `decisions` (shared by this thread and the worker). */
export function rewriteWith(a: Analysis, input: RewriteInput): string {
  return rewrite(a, {
    workspaceId: input.workspaceId,
    catalog: input.catalog,
    ...(input.decisions ? { filter: filterFrom(input.decisions, input.userId) } : {}),
  });
}

/** Decides every (table, operation) the statement needs; the first denial ends the request. */
export function decideAll(access: StatementSummary['access'], ctx: Pick<SqlContext, 'policies' | 'groups'>, subject: Subject): Decisions {
  const decisions: Decisions = {};
  for (const { table, operation } of access) {
    const d = decide({ policies: ctx.policies, groups: ctx.groups, subject, table, operation });
    if (!d.allowed) throw new ServiceError('POLICY_DENIED', 'Denied by policy', describeDenial(d, table, operation));
    decisions[`${table}:${operation}`] = d.filter;
  }
  return decisions;
}

/** The rewriter asks for a filter several times per table (WHERE guard, row checks): each is compiled once. */
export function filterFrom(decisions: Decisions, userId: string | null): FilterFn {
  const compiled = new Map<string, ReturnType<FilterFn>>();
  return (table, operation, qualifier) => {
    const key = `${table}:${operation}:${qualifier}`;
    let node = compiled.get(key);
    if (node === undefined) {
      const decided = `${table}:${operation}`;
      // Every (table, operation) the rewriter asks about was decided from the same analysis; anything else is a
      // bug, and an undecided pair must never mean "no filter".
      if (!Object.hasOwn(decisions, decided)) throw new ServiceError('INTERNAL_ERROR', `no policy decision for ${decided}`);
      const filter = decisions[decided];
      node = filter ? compileFilter(filter, { qualifier, userId }) : null;
      compiled.set(key, node);
    }
    return node;
  };
}
