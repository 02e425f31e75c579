import type { Subject } from '@wds/policy-engine';
import type { Template } from '@wds/sql-rewriter';
import type { SqlContext } from './context.js';
import type { StatementSummary } from './statement.js';

/**
 * Rewrite templates by statement shape (sql-rewriter's templates.ts), per workspace, policy context and subject.
 *
 * A template depends on the shape, on the workspace's policies, groups and columns, and on who asks; the first
 * two are the context object (context.ts), which the context cache replaces whenever any of them changes in any
 * process (the `ws:<id>` invalidation, published by every policy, group and schema change) and at its TTL.
 * Templates hang off that object (a WeakMap), so a replaced context takes its templates with it: nothing is ever
 * served from a context that is no longer current. The subject is part of the key within a context.
 */
export interface ShapeEntry {
  /** What the analysis of the shape says (the same for every statement of the shape). */
  summary: StatementSummary;
  /** No template can be made for this shape (say, the printed template does not parse back): always the full path. */
  refused: boolean;
  templates: WeakMap<SqlContext, Map<string, Template>>;
}

export interface RewriteCacheLimits {
  /** Shapes kept per process (least recently used go first). */
  maxShapes: number;
  /** Subjects with a template per shape and context. */
  maxSubjects: number;
}

export const DEFAULT_REWRITE_CACHE: RewriteCacheLimits = { maxShapes: 2000, maxSubjects: 256 };

const subjectKey = (s: Subject): string => (s.kind === 'user' ? `u:${s.userId}` : `s:${s.stfId}:${s.userId ?? ''}`);

/** What the cache did since the process started (for tests and operators). */
export interface RewriteCacheStats {
  /** Shapes known now. */
  shapes: number;
  /** Statements served from a template. */
  hits: number;
  /** Templates made (the full path ran and its template was kept). */
  templates: number;
  /** Shapes refused (no template could be made). */
  refused: number;
}

export class RewriteCache {
  private readonly shapes = new Map<string, ShapeEntry>();
  private hits = 0;
  private made = 0;
  private refusals = 0;

  constructor(private readonly limits: RewriteCacheLimits = DEFAULT_REWRITE_CACHE) {}

  /** The entry of a shape in a workspace, marked as just used. */
  shape(workspaceId: string, key: string): ShapeEntry | undefined {
    const k = `${workspaceId}\u0000${key}`;
    const entry = this.shapes.get(k);
    if (entry) {
      this.shapes.delete(k);
      this.shapes.set(k, entry);
    }
    return entry;
  }

  template(entry: ShapeEntry, ctx: SqlContext, subject: Subject): Template | undefined {
    const template = entry.refused ? undefined : entry.templates.get(ctx)?.get(subjectKey(subject));
    if (template) this.hits++;
    return template;
  }

  /** Keeps the template of a shape for a context and subject; without one, the shape is refused from now on. */
  remember(workspaceId: string, key: string, summary: StatementSummary, ctx: SqlContext, subject: Subject, template: Template | undefined): void {
    const k = `${workspaceId}\u0000${key}`;
    let entry = this.shapes.get(k);
    if (!entry) {
      if (this.shapes.size >= this.limits.maxShapes) this.shapes.delete(this.shapes.keys().next().value as string);
      entry = { summary: freeze(summary), refused: false, templates: new WeakMap() };
      this.shapes.set(k, entry);
    }
    if (!template) {
      if (!entry.refused) this.refusals++;
      entry.refused = true;
      return;
    }
    this.made++;
    let bySubject = entry.templates.get(ctx);
    if (!bySubject) {
      bySubject = new Map();
      entry.templates.set(ctx, bySubject);
    }
    if (bySubject.size >= this.limits.maxSubjects) bySubject.delete(bySubject.keys().next().value as string);
    bySubject.set(subjectKey(subject), template);
  }

  get stats(): RewriteCacheStats {
    return { shapes: this.shapes.size, hits: this.hits, templates: this.made, refused: this.refusals };
  }
}

/** A summary served to many requests: nobody may change it. */
function freeze(s: StatementSummary): StatementSummary {
  Object.freeze(s.tables);
  for (const x of s.access) Object.freeze(x);
  Object.freeze(s.access);
  return Object.freeze(s);
}
