/** The contract every STF runtime implements (docs/stfs.md#instant-run). */

export interface StfLimits {
  /**
   * Wall-clock limit of one run, from the moment it is asked for: time spent waiting for a worker counts. Enforced
   * even when the guest is stuck (the worker is terminated).
   */
  timeoutMs: number;
  /** Memory the guest may use. */
  memoryBytes: number;
  /** Largest JSON output (bytes of its serialisation). */
  maxOutputBytes: number;
  /** Largest total of captured log text; later lines are dropped and one truncation line is added. */
  maxLogBytes: number;
}

export const DEFAULT_LIMITS: StfLimits = {
  timeoutMs: 5_000,
  memoryBytes: 64 * 1024 * 1024,
  maxOutputBytes: 10 * 1024 * 1024,
  maxLogBytes: 256 * 1024,
};

/** What `sql(query)` answers inside an STF: rows for a SELECT, the affected count otherwise. */
export type SqlCallResult = Record<string, unknown>[] | number;

export interface StfRunRequest {
  /** JavaScript source text, or the bytes of a wasm module. */
  code: string | Uint8Array;
  input: unknown;
  sources: Record<string, unknown>;
  /** The calling user's id, or null when anonymous. */
  caller: string | null;
  /**
   * The workspace and STF the run belongs to (in the wasm and docker input documents; null when not given). Runs
   * queue for a runtime's workers per workspace (fair-queue.ts); runs without a workspace share one queue.
   */
  workspaceId?: string | null;
  /**
   * Whose share of the runtime the run takes (the workspace's creator, @wds/workspace-sql workspacePrincipal): runs
   * are admitted by principal first, then by workspace, so one user's many workspaces get one share. Default: the
   * workspace itself.
   */
  principalId?: string | null;
  stfId?: string | null;
  /** The STF's secrets by env key; their values are masked in captured logs. */
  secrets: Record<string, string>;
  limits: StfLimits;
  /**
   * The SQL callback, run by the host under the right policy subject in one transaction per run. It throws
   * (rejects) with an Error whose message is safe to show the user.
   */
  sql?: (query: string) => Promise<SqlCallResult>;
  /**
   * Called once when the run is handed to what runs it (a worker): from then on it runs, and is answered (an output
   * or a failure of the code) unless the runtime itself fails. Callers start work here that should overlap the run.
   * Runtimes that do not call it leave the caller to do that work after the run.
   */
  onStart?: () => void;
  /**
   * Aborted when nobody waits for the run any more (the MCP call was cancelled or ran out of time, the HTTP client
   * went away, the workflow run was cancelled): a run still waiting for a slot leaves the queue, and a run in
   * progress is stopped — the JavaScript guest interrupted, the wasm plugin's worker terminated, the container
   * killed — and its slot freed. The run then rejects with StfRunCancelled.
   */
  signal?: AbortSignal;
}

export interface LogLine {
  level: 'log' | 'info' | 'warn' | 'error' | 'debug';
  message: string;
}

export interface StfRunResult {
  output: unknown;
  logs: LogLine[];
  duration_ms: number;
}

export type StfFailureKind =
  | 'syntax' // the code does not compile; details carry line and column
  | 'runtime' // the user's code threw
  | 'timeout' // timeoutMs exceeded
  | 'memory' // memoryBytes exceeded
  | 'stack' // stack overflow
  | 'output_too_large' // maxOutputBytes exceeded
  | 'invalid_output' // output is not JSON-serialisable
  | 'invalid_module'; // a wasm module that cannot be used (no export, no memory maximum, …)

/** A failure of the user's code or of a limit: safe to show to the STF's author (secrets masked). */
export class StfError extends Error {
  constructor(
    readonly kind: StfFailureKind,
    message: string,
    readonly details?: string,
    readonly logs: LogLine[] = [],
  ) {
    super(message);
    this.name = 'StfError';
  }
}

export interface StfRuntime {
  run(req: StfRunRequest): Promise<StfRunResult>;
  /** Releases workers and caches. */
  close(): Promise<void>;
}

/**
 * The runtime cannot run anything now for a reason that is not the user's code (the container engine is not
 * reachable, …): the HTTP layer answers 503.
 */
export class StfRuntimeUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StfRuntimeUnavailable';
  }
}

/** The run was stopped because its signal aborted (StfRunRequest.signal): nobody waits for its answer. */
export class StfRunCancelled extends Error {
  constructor(message = 'The STF run was cancelled') {
    super(message);
    this.name = 'StfRunCancelled';
  }
}

/**
 * The workspace already has as many runs waiting for this runtime as it may have: the HTTP layer answers 429
 * TOO_MANY_REQUESTS. Nothing ran.
 */
export class StfRuntimeBusy extends Error {
  constructor(
    message: string,
    readonly details?: string,
  ) {
    super(message);
    this.name = 'StfRuntimeBusy';
  }
}
