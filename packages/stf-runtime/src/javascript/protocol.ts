/** Messages between the main thread (pool.ts) and a JavaScript worker (worker.ts). */
import type { LogLine, StfFailureKind } from '../types.js';
import type { LibraryCatalog } from './libraries.js';

/** Indexes of WorkerInit.signal. */
export const SIGNAL_SQL = 0;
export const SIGNAL_WARM = 1;
/** The id of a run whose caller went away (set by the main thread): the guest is interrupted at its next check. */
export const SIGNAL_CANCEL = 2;
/** Entries of WorkerInit.signal. */
export const SIGNAL_ENTRIES = 3;

/** What the worker is given at start (workerData). */
export interface WorkerInit {
  /**
   * Int32Array(SIGNAL_ENTRIES) over a SharedArrayBuffer: [SIGNAL_SQL] a counter the main thread bumps after each SQL
   * answer it posts (and when it cancels a run, to wake a worker waiting for one); [SIGNAL_WARM] 1 while the worker
   * holds the next run's engine, made ahead (set by the worker only); [SIGNAL_CANCEL] the id of the run cancelled last.
   */
  signal: SharedArrayBuffer;
  /** The worker's end of the channel that carries SQL answers; read only with receiveMessageOnPort. */
  answers: import('node:worker_threads').MessagePort;
  /**
   * Libraries importable by package name: where the bundles are (the worker reads one when a run first imports it),
   * or inline sources (name → ES module source) given to createJavascriptRuntime.
   */
  libraries: { catalog: LibraryCatalog } | { sources: Record<string, string> };
  /** The QuickJS WASM, compiled once by the pool (a WebAssembly.Module), when it could be. */
  quickjs?: object;
  /** The memory limit the first QuickJS heap is made for (runs with another limit get a heap of their own). */
  memoryBytes: number;
}

export interface RunJob {
  type: 'run';
  runId: number;
  code: string;
  /** JSON of { input, sources, caller, env }. */
  boot: string;
  memoryBytes: number;
  maxOutputBytes: number;
  maxLogBytes: number;
  timeoutMs: number;
  /** Date.now() value after which the guest is interrupted (a little before the main thread's hard limit). */
  interruptAt: number;
  hasSql: boolean;
  /** Secret values to mask in log lines. */
  secrets: string[];
}

/** Test hook: abort the worker's QuickJS module the way a leaked handle does. */
export interface PoisonJob {
  type: 'poison';
}

export type ToWorker = RunJob | PoisonJob;

/** The answer to one SQL call, posted on the answers port. */
export type SqlAnswer = { seq: number; ok: true; json: string } | { seq: number; ok: false; message: string };

export type RunOutcome =
  | { ok: true; output: string }
  | { ok: false; kind: StfFailureKind; message: string; details?: string }
  /** A failure of the engine itself, not of the user's code. */
  | { ok: false; internal: string };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'fatal'; message: string }
  | { type: 'log'; runId: number; level: LogLine['level']; message: string }
  | { type: 'sql'; runId: number; seq: number; query: string }
  /**
   * `heapBytes`: the worker's QuickJS heap after the run (the pool retires a worker whose heap grew large).
   * `madeAhead`: the run used the engine made between runs (worker.ts), not one made for it.
   */
  | { type: 'result'; runId: number; outcome: RunOutcome; engineReset: boolean; heapBytes: number; madeAhead: boolean }
  | { type: 'poisoned'; engineReset: boolean }
  /** Disposing a run's engine (or making the next) broke the QuickJS module, which was replaced. */
  | { type: 'engine-reset' };
