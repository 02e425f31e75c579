import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type ErrorCode, ERROR_STATUS, ServiceError } from '@wds/errors';
import type { FromWorker, ToWorker } from './offload-protocol.js';
import type { AnalysedStatement, RewriteInput } from './statement.js';

export interface AnalysisWorkerOptions {
  /** Heap of the worker: a statement that needs more ends the worker (and gets an error), never the process. */
  maxHeapMb?: number;
  /** Long statements one workspace may have in the worker at once (analysed and not yet released). */
  maxPerWorkspace?: number;
  /** Long statements in the worker at once, all workspaces together (each analysis can hold ~100 MB). */
  maxTotal?: number;
}

type Pending = { resolve: (m: FromWorker) => void; reject: (err: unknown) => void };

/**
 * One worker thread that analyses and rewrites long statements. Its analyses stay in the worker (they can be
 * hundreds of MB); the service gets a summary and a handle to rewrite with. Started on first use; if it dies (out
 * of memory on a pathological statement) the statements in flight fail and the next one starts a new worker.
 */
export class AnalysisWorker {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  /** Analyses in the worker (started and not released), by workspace, and in total. */
  readonly #inFlight = new Map<string, number>();
  #total = 0;

  constructor(private readonly opts: AnalysisWorkerOptions = {}) {}

  /** Analyses `sql` for `workspaceId` (whose share of the worker it counts against until released). */
  async analyse(sql: string, workspaceId = ''): Promise<AnalysedStatement> {
    const mine = this.#inFlight.get(workspaceId) ?? 0;
    if (mine >= (this.opts.maxPerWorkspace ?? 2) || this.#total >= (this.opts.maxTotal ?? 8)) {
      throw new ServiceError(
        'TOO_MANY_REQUESTS',
        'Too many long statements are being analysed',
        'statements over 32 KiB are analysed one or two per workspace at a time; retry when one has finished',
      );
    }
    this.#inFlight.set(workspaceId, mine + 1);
    this.#total++;
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      this.#total--;
      const n = (this.#inFlight.get(workspaceId) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(workspaceId, n);
      else this.#inFlight.delete(workspaceId);
    };
    let answer: FromWorker;
    try {
      answer = await this.#call((id) => ({ op: 'analyse', id, sql }));
    } catch (err) {
      uncount();
      throw err;
    }
    if (!('summary' in answer)) throw new Error('analysis worker: unexpected answer');
    const { handle, summary } = answer;
    const worker = this.#worker;
    let released = false;
    return {
      ...summary,
      rewrite: async (input: RewriteInput) => {
        // Handles are the worker's own: a worker started since (after a crash) holds other statements.
        if (released || worker !== this.#worker) throw analyserLost('the SQL analyser restarted before this statement was rewritten');
        const catalog = [...input.catalog].map(([t, cols]) => [t, [...cols]] as [string, [string, string][]]);
        const r = await this.#call((id) => ({ op: 'rewrite', id, handle, input: { ...input, catalog } }));
        if (!('sql' in r)) throw new Error('analysis worker: unexpected answer');
        return r.sql;
      },
      release: () => {
        uncount();
        // Only the worker that holds the analysis can drop it; a replaced worker took its analyses with it.
        if (released || worker !== this.#worker) return;
        released = true;
        worker?.postMessage({ op: 'release', handle } satisfies ToWorker);
      },
    };
  }

  /** Ends the worker; statements in flight fail. */
  async close(): Promise<void> {
    const w = this.#worker;
    this.#worker = undefined;
    await w?.terminate();
  }

  #call(message: (id: number) => ToWorker): Promise<FromWorker> {
    const worker = this.#start();
    const id = ++this.#nextId;
    return new Promise<FromWorker>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage(message(id));
    }).then((answer) => {
      if ('error' in answer) throw toServiceError(answer.error);
      return answer;
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerFile(), { resourceLimits: { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 1536 } });
    worker.unref();
    worker.on('message', (m: FromWorker) => {
      const p = this.#pending.get(m.id);
      this.#pending.delete(m.id);
      p?.resolve(m);
    });
    const lost = (err: unknown) => {
      if (this.#worker === worker) this.#worker = undefined;
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const p of pending) {
        p.reject(analyserLost(`a statement in flight needed more than its memory or failed (${String((err as Error)?.message ?? err).slice(0, 200)})`));
      }
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`exit code ${code}`)));
    this.#worker = worker;
    return worker;
  }
}

const analyserLost = (why: string) =>
  new ServiceError('SERVICE_UNAVAILABLE', 'The SQL analyser stopped while it worked on this statement', `${why}; try again`);

function toServiceError(e: { code?: string; message: string; details?: string }): Error {
  if (e.code && e.code in ERROR_STATUS) return new ServiceError(e.code as ErrorCode, e.message, e.details);
  return analyserLost(`the analyser failed: ${e.message.slice(0, 200)}`);
}

/** dist/offload-worker.js next to this file (built), or the built copy when this runs from src (tests). */
function workerFile(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const sibling = join(here, 'offload-worker.js');
  if (existsSync(sibling)) return sibling;
  const built = join(here, '..', 'dist', 'offload-worker.js');
  if (!existsSync(built)) throw new Error(`the analysis worker is not built (${built}): run \`pnpm build\` in packages/workspace-sql`);
  return built;
}
