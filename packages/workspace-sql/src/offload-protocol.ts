import type { RewriteInput, StatementSummary } from './statement.js';

/** Messages between WorkspaceSql and its analysis worker (offload-worker.ts). */
export type ToWorker =
  | { op: 'analyse'; id: number; sql: string }
  | { op: 'rewrite'; id: number; handle: number; input: Omit<RewriteInput, 'catalog'> & { catalog: [string, [string, string][]][] } }
  | { op: 'release'; handle: number };

export type FromWorker =
  | { id: number; summary: StatementSummary; handle: number }
  | { id: number; sql: string }
  | { id: number; error: { code?: string; message: string; details?: string } };
