import { createHash } from 'node:crypto';
import type { Subject } from '@wds/policy-engine';
import type { LexicalMap, Template } from '@wds/sql-rewriter';
import type { SqlContext } from './context.js';
import type { StatementSummary } from './statement.js';

/**
 * Rewrite templates by statement shape (sql-rewriter's templates.ts), per workspace, policy context and subject.
 *
 * A template depends on the shape, on the workspace's policies, groups and columns, and on who asks; the first
 * two are the context object (context.ts), which the context cache replaces whenever any of them changes in any
 * process (the `ws:<id>` invalidation, published by every policy, group and schema change) and at its TTL. An
 * entry keeps the templates of one context object only: a template is served only when the entry's context is the
 * very object the context cache holds now, so nothing made under a replaced context is ever served. The subject
 * is part of the key within a context.
 *
 * Memory is bounded three ways: shapes are kept by the SHA-256 of their key (a key can be many times the
 * statement's size), at most `maxShapes` in all and `maxShapesPerWorkspace` per workspace (a workspace sending
 * endless shapes evicts its own, not other tenants'), and templates' text at most `maxTemplateBytes` in all.
 */
export interface ShapeEntry {
  /** Its key in the cache. */
  key: string;
  workspaceId: string;
  /** What the analysis of the shape says (the same for every statement of the shape). */
  summary: StatementSummary;
  /** No template can be made for this shape (say, the printed template does not parse back): always the full path. */
  refused: boolean;
  /** The context the templates were made under, and the templates by subject. */
  context: SqlContext | undefined;
  templates: Map<string, Template>;
  /** What the templates take (their text, counted twice: as one string and as segments). */
  bytes: number;
  /** Lexical shapes (templates.ts) known to be statements of this shape, with how to read their constants. */
  lexical: Map<string, LexicalMap>;
}

export interface RewriteCacheLimits {
  /** Shapes kept per process (least recently used go first). */
  maxShapes: number;
  /** Shapes one workspace may have (its own least recently used go first). */
  maxShapesPerWorkspace: number;
  /** Subjects with a template per shape. */
  maxSubjects: number;
  /** Bytes of template text kept per process. */
  maxTemplateBytes: number;
}

export const DEFAULT_REWRITE_CACHE: RewriteCacheLimits = {
  maxShapes: 2000,
  maxShapesPerWorkspace: 200,
  maxSubjects: 256,
  maxTemplateBytes: 64 * 1024 * 1024,
};

/** What the cache did since the process started (for tests and operators). */
export interface RewriteCacheStats {
  /** Shapes known now. */
  shapes: number;
  /** Bytes of template text held now. */
  templateBytes: number;
  /** Statements served from a template. */
  hits: number;
  /** Templates made (the full path ran and its template was kept). */
  templates: number;
  /** Shapes refused (no template could be made). */
  refused: number;
}

const subjectKey = (s: Subject): string => (s.kind === 'user' ? `u:${s.userId}` : `s:${s.stfId}:${s.userId ?? ''}`);
const sizeOf = (t: Template): number => 4 * t.text.length + 64 * t.slots.length;

/** Lexical shapes kept per shape: a statement written in many ways still takes a bounded place. */
const MAX_LEXICAL_PER_SHAPE = 8;

export class RewriteCache {
  private readonly shapes = new Map<string, ShapeEntry>();
  /** Lexical shape (per workspace) → its shape's entry. */
  private readonly lexical = new Map<string, ShapeEntry>();
  private readonly perWorkspace = new Map<string, number>();
  private bytes = 0;
  private hits = 0;
  private made = 0;
  private refusals = 0;
  private readonly limits: RewriteCacheLimits;

  constructor(limits: Partial<RewriteCacheLimits> = {}) {
    this.limits = { ...DEFAULT_REWRITE_CACHE, ...limits };
  }

  private static keyOf(workspaceId: string, key: string): string {
    return `${workspaceId}:${createHash('sha256').update(key).digest('base64')}`;
  }

  /** The entry of a shape in a workspace, marked as just used. */
  shape(workspaceId: string, key: string): ShapeEntry | undefined {
    const k = RewriteCache.keyOf(workspaceId, key);
    const entry = this.shapes.get(k);
    if (entry) {
      this.shapes.delete(k);
      this.shapes.set(k, entry);
    }
    return entry;
  }

  /** The shape entry and constant map of a lexical shape learnt before (`learn`). */
  lexicalShape(workspaceId: string, key: string): { entry: ShapeEntry; map: LexicalMap } | undefined {
    const entry = this.lexical.get(`${workspaceId}:${key}`);
    const map = entry?.lexical.get(key);
    return entry && map ? { entry, map } : undefined;
  }

  /** Remembers that statements of a lexical shape are statements of `entry`'s shape, read by `map`. */
  learn(entry: ShapeEntry, key: string, map: LexicalMap): void {
    if (entry.lexical.has(key) || !this.shapes.has(entry.key)) return;
    if (entry.lexical.size >= MAX_LEXICAL_PER_SHAPE) {
      const oldest = entry.lexical.keys().next().value as string;
      entry.lexical.delete(oldest);
      this.lexical.delete(`${entry.workspaceId}:${oldest}`);
    }
    entry.lexical.set(key, map);
    this.lexical.set(`${entry.workspaceId}:${key}`, entry);
  }

  /** The template for this context (the one the context cache holds now) and subject, if one was made. */
  template(entry: ShapeEntry, ctx: SqlContext, subject: Subject): Template | undefined {
    if (entry.refused || entry.context !== ctx) return undefined;
    const template = entry.templates.get(subjectKey(subject));
    if (template) this.hits++;
    return template;
  }

  /** Keeps the template of a shape for a context and subject; without one, the shape is refused from now on. */
  remember(workspaceId: string, key: string, summary: StatementSummary, ctx: SqlContext, subject: Subject, template: Template | undefined): void {
    const k = RewriteCache.keyOf(workspaceId, key);
    let entry = this.shapes.get(k);
    if (!entry) {
      entry = { key: k, workspaceId, summary: freeze(summary), refused: false, context: undefined, templates: new Map(), bytes: 0, lexical: new Map() };
      this.shapes.set(k, entry);
      this.perWorkspace.set(workspaceId, (this.perWorkspace.get(workspaceId) ?? 0) + 1);
    }
    if (!template) {
      if (!entry.refused) this.refusals++;
      entry.refused = true;
      this.drop(entry, false);
    } else if (!entry.refused) {
      // Templates of an older context are never served again: they go.
      if (entry.context !== ctx) this.drop(entry, false);
      entry.context = ctx;
      const subjectId = subjectKey(subject);
      const old = entry.templates.get(subjectId);
      if (old) this.forget(entry, subjectId, old);
      else if (entry.templates.size >= this.limits.maxSubjects) {
        const [oldest, t] = entry.templates.entries().next().value as [string, Template];
        this.forget(entry, oldest, t);
      }
      entry.templates.set(subjectId, template);
      entry.bytes += sizeOf(template);
      this.bytes += sizeOf(template);
      this.made++;
    }
    this.evict(workspaceId);
  }

  private forget(entry: ShapeEntry, subjectId: string, t: Template): void {
    entry.templates.delete(subjectId);
    entry.bytes -= sizeOf(t);
    this.bytes -= sizeOf(t);
  }

  /** Drops an entry's templates (and with `remove`, the entry). */
  private drop(entry: ShapeEntry, remove: boolean, key?: string): void {
    this.bytes -= entry.bytes;
    entry.bytes = 0;
    entry.templates.clear();
    entry.context = undefined;
    if (remove && key !== undefined && this.shapes.delete(key)) {
      for (const lexicalKey of entry.lexical.keys()) this.lexical.delete(`${entry.workspaceId}:${lexicalKey}`);
      entry.lexical.clear();
      const n = (this.perWorkspace.get(entry.workspaceId) ?? 1) - 1;
      if (n > 0) this.perWorkspace.set(entry.workspaceId, n);
      else this.perWorkspace.delete(entry.workspaceId);
    }
  }

  /** Least recently used first: the workspace's own shapes past its quota, then any past the totals. */
  private evict(workspaceId: string): void {
    if ((this.perWorkspace.get(workspaceId) ?? 0) > this.limits.maxShapesPerWorkspace) {
      for (const [k, e] of this.shapes) {
        if (e.workspaceId !== workspaceId) continue;
        this.drop(e, true, k);
        break;
      }
    }
    for (const [k, e] of this.shapes) {
      if (this.shapes.size <= this.limits.maxShapes && this.bytes <= this.limits.maxTemplateBytes) break;
      this.drop(e, true, k);
    }
  }

  get stats(): RewriteCacheStats {
    return { shapes: this.shapes.size, templateBytes: this.bytes, hits: this.hits, templates: this.made, refused: this.refusals };
  }
}

/** A summary served to many requests: nobody may change it. */
function freeze(s: StatementSummary): StatementSummary {
  Object.freeze(s.tables);
  for (const x of s.access) Object.freeze(x);
  Object.freeze(s.access);
  return Object.freeze(s);
}
