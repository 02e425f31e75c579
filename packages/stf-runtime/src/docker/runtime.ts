/**
 * The docker STF runtime (docs/stfs.md#the-docker-runtime): the STF's `code` is a config `{ image, command?, env?,
 * secret_keys? }`; each run is two containers — the STF's, and a small relay that owns the run's network namespace
 * (relay.ts):
 *
 * - the STF container: the image's own ENTRYPOINT, CMD and WORKDIR (a config's `command` replaces the CMD only, like
 *   docker's `command`), the relay's network namespace (`NetworkMode: "container:<relay>"`: only a loopback
 *   interface, no route off the host), a read-only root filesystem, every capability dropped, `no-new-privileges`,
 *   an unprivileged user (65534), a small `/tmp` tmpfs (noexec), and cgroup limits on memory (swap included) and
 *   process count; the relay has the same hardening and `NetworkMode: "none"`;
 * - on stdin, one JSON document:
 *     { "workspace_id", "stf_id", "caller", "input", "sources",
 *       "api_url": "http://127.0.0.1:8080", "api_socket": "/stf/api.sock", "api_token": "<per-run token>" }
 * - the environment of `env` plus the secrets named in `secret_keys` (values masked in logs and errors);
 * - the SQL callback (api-socket.ts): a per-run Unix socket, bind-mounted read-only at /stf, reached directly or
 *   over TCP at `api_url` through the relay — `POST {api_url}/api/v1/workspaces/{workspace_id}/sql` with
 *   `{"sql": …}` (the origin platform's form) or `POST /sql` with `{"query": …}`.
 *
 * The container prints one JSON document with a top-level `output` on stdout (if stdout holds other lines too,
 * the last line that is such a document counts); stderr lines are the run's logs. A non-zero exit fails the run
 * with the tail of stderr (and the `error` of an `{"error": …}` document on stdout in the message). Limits:
 * `timeoutMs` covers waiting for a slot and the containers' whole life (killed at the deadline), stdout beyond
 * `maxOutputBytes` kills it, exit 137 that we did not cause is reported as the memory limit (cgroup v1 does not
 * always set OOMKilled), at most `concurrency` runs (each a relay and an STF container) go at once, the others
 * waiting in a per-workspace fair queue (fair-queue.ts). Images are never pulled: the operator loads them into the
 * engine.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDockerConfig } from '../docker-config.js';
import { FairQueue, type FairQueueStats } from '../fair-queue.js';
import { createMasker, LogCollector } from '../wasm/logs.js';
import { StfError, StfRunCancelled, type StfRunRequest, type StfRunResult, type StfRuntime } from '../types.js';
import { openApiSocket } from './api-socket.js';
import { ATTACHED_STDIO, EngineClient, EngineError, hardenedHostConfig, parseDockerHost, StreamDemuxer } from './engine.js';
import { createRelay, defaultRelayImage, RELAY_PORT, type StartedRelay, startRelay } from './relay.js';

export interface DockerRuntimeOptions {
  /** The engine: `unix:///run/podman/podman.sock`, `tcp://127.0.0.1:2375`. */
  dockerHost: string;
  /** Containers running at once in this process (default 2); later runs wait for a slot within their deadline. */
  concurrency?: number;
  /** Runs one workspace may have waiting for a slot; one more is refused with StfRuntimeBusy (default 16). */
  maxQueuedPerWorkspace?: number;
  /** Containers one workspace may have running even when nobody else waits (default: `concurrency`). */
  maxRunningPerWorkspace?: number;
  /** Processes (threads) one container may have (default 64). */
  pidsLimit?: number;
  /** Size of the writable /tmp tmpfs (default 16 MiB; it counts toward the memory limit). */
  tmpfsBytes?: number;
  /** The user the command runs as (default "65534:65534", nobody). */
  user?: string;
  /** Where the per-run directories (input socket) are created (default: a private directory under os.tmpdir()). */
  workDir?: string;
  /**
   * The image of each run's relay container: any image with `node` (≥ 18) on its PATH. Default: the environment
   * `localhost/wds-node:<this process's node version>-2` (scripts/container-engine.sh imports it); the service
   * passes its STF_DOCKER_RELAY_IMAGE setting.
   */
  relayImage?: string;
  /** Memory (swap included) of the relay container (default 64 MiB). */
  relayMemoryBytes?: number;
  /** Processes (threads) the relay container may have (default 32). */
  relayPidsLimit?: number;
}

export interface DockerRuntimeStats {
  runs: number;
  activeRuns: number;
  waiting: number;
  /** Runs holding a slot and waiting for one, per workspace. */
  queue: FairQueueStats;
}

export interface DockerRuntime extends StfRuntime {
  stats(): DockerRuntimeStats;
  /** Asks the engine for its version: resolves when it answers (a health check), rejects with EngineError. */
  ping(): Promise<{ version: string; apiVersion: string }>;
  /**
   * Removes STF containers whose run's deadline passed more than `graceMs` ago: left by a process that died (a
   * live process removes its containers itself). Returns how many; any process of the deployment may call it.
   */
  removeExpired(graceMs: number): Promise<number>;
}

/** Where the per-run directory is mounted in the container, and the socket in it. */
export const STF_MOUNT = '/stf';
export const API_SOCKET = `${STF_MOUNT}/api.sock`;
/** The stdin document's `api_url`: the relay, on the run's own loopback. */
export const API_URL = `http://127.0.0.1:${RELAY_PORT}`;
const STDERR_TAIL_BYTES = 4096;
/** How long a relay may take to listen before the run fails as the engine's fault (within the run's deadline). */
const RELAY_READY_MS = 30_000;
const ENGINE_GRACE_MS = 10_000;
/**
 * What podman writes into the attached stderr stream itself when a container exits without reading all of its
 * stdin: not the STF's output, so it is neither a log line nor part of the error's tail.
 */
const ENGINE_NOISE = /^Error: read unixpacket .*\/attach: read: connection reset by peer$/;

export function createDockerRuntime(opts: DockerRuntimeOptions): DockerRuntime {
  return new DockerStfRuntime(opts);
}

class DockerStfRuntime implements DockerRuntime {
  private readonly engine: EngineClient;
  private readonly slots: FairQueue;
  private readonly active = new Set<string>();
  /** Kill switches of the running containers, pulled by close(). */
  private readonly closers = new Set<() => void>();
  private runs = 0;
  private inProgress = 0;
  private closed = false;
  private baseDir: Promise<string> | undefined;

  constructor(private readonly opts: DockerRuntimeOptions) {
    this.engine = new EngineClient(parseDockerHost(opts.dockerHost));
    this.slots = new FairQueue({
      capacity: Math.max(1, opts.concurrency ?? 2),
      maxQueuedPerWorkspace: opts.maxQueuedPerWorkspace ?? 16,
      maxRunningPerWorkspace: opts.maxRunningPerWorkspace,
      slotName: 'container slots',
    });
  }

  stats(): DockerRuntimeStats {
    const queue = this.slots.stats();
    return { runs: this.runs, activeRuns: this.inProgress, waiting: queue.waiting, queue };
  }

  async ping(): Promise<{ version: string; apiVersion: string }> {
    const body = (await this.engine.call('GET', '/version', undefined, 5_000)) as { Version?: string; ApiVersion?: string };
    return { version: String(body.Version ?? ''), apiVersion: String(body.ApiVersion ?? '') };
  }

  async removeExpired(graceMs: number): Promise<number> {
    const filters = encodeURIComponent(JSON.stringify({ label: ['wds.stf=true'] }));
    const listed = (await this.engine.call('GET', `/containers/json?all=1&filters=${filters}`, undefined, 10_000)) as {
      Id: string;
      Labels?: Record<string, string>;
      Created?: number;
    }[];
    const now = Date.now();
    let removed = 0;
    // A relay goes last: the engine refuses to remove it while an STF container still shares its namespace.
    const relayLast = (c: (typeof listed)[number]) => (c.Labels?.['wds.role'] === 'relay' ? 1 : 0);
    for (const c of [...listed].sort((a, b) => relayLast(a) - relayLast(b))) {
      if (this.active.has(c.Id)) continue;
      // Containers made before the label existed: their creation time plus the longest a run may take (an hour).
      const deadline = Number(c.Labels?.['wds.deadline']) || (c.Created ?? now / 1000) * 1000 + 3600_000;
      if (deadline + graceMs > now) continue;
      const res = await this.engine.request('DELETE', `/containers/${c.Id}?force=1&v=1`).catch(() => undefined);
      if (res && (res.status < 300 || res.status === 404)) removed++;
    }
    return removed;
  }

  private workDir(): Promise<string> {
    this.baseDir ??= (async () => {
      const parent = this.opts.workDir ?? tmpdir();
      await mkdir(parent, { recursive: true });
      // Private to this process's user; the engine (root) bind-mounts the run directories inside it.
      return mkdtemp(join(parent, 'wds-docker-'));
    })();
    return this.baseDir;
  }

  async run(req: StfRunRequest): Promise<StfRunResult> {
    if (this.closed) throw new EngineError('the docker runtime is closed');
    const started = Date.now();
    const deadline = started + req.limits.timeoutMs;
    const config = parseDockerConfig(typeof req.code === 'string' ? Buffer.from(req.code) : req.code);
    const env: string[] = Object.entries(config.env ?? {}).map(([k, v]) => `${k}=${v}`);
    for (const key of config.secret_keys ?? []) {
      const value = req.secrets[key];
      if (value === undefined) throw new StfError('runtime', `The secret ${key} named in secret_keys is not set on this STF`);
      env.push(`${key}=${value}`);
    }

    if (req.signal?.aborted) throw new StfRunCancelled();
    const grant = await this.slots.acquire(req.workspaceId, deadline - Date.now(), req.principalId, req.signal);
    if (!grant) {
      throw new StfError(
        'timeout',
        `The STF did not get one of the ${this.slots.capacity} container slots within its time limit of ${req.limits.timeoutMs} ms`,
      );
    }
    this.runs++;
    this.inProgress++;
    let runDir: string | undefined;
    let id: string | undefined;
    let relayId: string | undefined;
    let relay: StartedRelay | undefined;
    let api: Awaited<ReturnType<typeof openApiSocket>> | undefined;
    try {
      runDir = join(await this.workDir(), randomBytes(8).toString('hex'));
      await mkdir(runDir, { mode: 0o755 });
      await chmod(runDir, 0o755);
      api = await openApiSocket(join(runDir, 'api.sock'), req.sql, { workspaceId: req.workspaceId, stfId: req.stfId });
      const masked = createMasker([...Object.values(req.secrets), api.token]);
      const labels = (role: 'stf' | 'relay') => ({
        'wds.stf': 'true',
        'wds.role': role,
        'wds.workspace_id': req.workspaceId ?? '',
        'wds.stf_id': req.stfId ?? '',
        // Epoch ms: past it, only a dead process can still own the container (removeExpired).
        'wds.deadline': String(deadline),
      });
      relayId = await createRelay(this.engine, {
        image: this.opts.relayImage ?? defaultRelayImage(),
        runDir,
        mount: STF_MOUNT,
        socket: API_SOCKET,
        user: this.opts.user ?? '65534:65534',
        memoryBytes: this.opts.relayMemoryBytes ?? 64 * 1024 * 1024,
        pidsLimit: this.opts.relayPidsLimit ?? 32,
        labels: labels('relay'),
      });
      const relayOf = relayId;
      this.active.add(relayOf);
      // The STF container is created while the relay starts; it is started once the relay listens.
      const creating = this.create(config.image, config.command, env, runDir, req, relayOf, labels('stf')).then((created) => {
        id = created;
        this.active.add(created);
      });
      const starting = startRelay(this.engine, relayOf, Math.min(deadline, Date.now() + RELAY_READY_MS), () =>
        Date.now() >= deadline
          ? new StfError('timeout', `The STF ran longer than ${req.limits.timeoutMs} ms`, 'its relay container was not ready in time')
          : new EngineError(`the relay container did not print its ready line within ${RELAY_READY_MS} ms`),
      ).then((started) => {
        relay = started;
      });
      const [created, ready] = await Promise.allSettled([creating, starting]);
      // The user's own mistake (a missing image) first, then the relay's failure.
      if (created.status === 'rejected' && created.reason instanceof StfError) throw created.reason;
      if (ready.status === 'rejected') throw ready.reason;
      if (created.status === 'rejected' || !id) throw created.status === 'rejected' ? created.reason : new EngineError('no container');
      if (this.closed) throw new EngineError('the docker runtime was closed during the run');
      if (req.signal?.aborted) throw new StfRunCancelled();
      return await this.execute(id, req, api.token, deadline, started, masked);
    } finally {
      // The STF container first: the engine does not remove a relay whose namespace another container shares.
      if (id) {
        await this.remove(id);
        this.active.delete(id);
      }
      if (relayId) {
        await this.remove(relayId);
        this.active.delete(relayId);
      }
      relay?.release();
      await api?.close();
      if (runDir) await rm(runDir, { recursive: true, force: true }).catch(() => undefined);
      this.inProgress--;
      grant.release();
    }
  }

  /** Force-removes a container; a refusal (the engine busy with its state) is retried a few times. */
  private async remove(id: string): Promise<void> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const res = await this.engine.request('DELETE', `/containers/${id}?force=1&v=1`).catch(() => undefined);
      if (res && (res.status < 300 || res.status === 404)) return;
      await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
    }
  }

  private async create(
    image: string,
    command: string[] | undefined,
    env: string[],
    runDir: string,
    req: StfRunRequest,
    relayId: string,
    labels: Record<string, string>,
  ): Promise<string> {
    const memory = req.limits.memoryBytes;
    const tmpfs = this.opts.tmpfsBytes ?? 16 * 1024 * 1024;
    const res = await this.engine.request('POST', '/containers/create', {
      Image: image,
      // Without `command` the image's ENTRYPOINT, CMD and WORKDIR run as built; `command` replaces the CMD only.
      ...(command ? { Cmd: command } : {}),
      Env: env,
      User: this.opts.user ?? '65534:65534',
      ...ATTACHED_STDIO,
      Labels: labels,
      HostConfig: hardenedHostConfig({
        // The relay's namespace: a loopback interface where the relay listens, and nothing else.
        network: { relay: relayId },
        memoryBytes: memory,
        pidsLimit: this.opts.pidsLimit ?? 64,
        bind: `${runDir}:${STF_MOUNT}:ro`,
        tmpfs: { '/tmp': `rw,noexec,nosuid,nodev,mode=1777,size=${tmpfs}` },
      }),
    });
    if (res.status === 404) {
      throw new StfError(
        'invalid_module',
        `The image ${image} is not present on the container engine`,
        'images are not pulled by the service; the operator loads them into the engine',
      );
    }
    if (res.status !== 201 && res.status !== 200) {
      const message = (res.body as { message?: string } | undefined)?.message ?? `HTTP ${res.status}`;
      if (res.status >= 500 && /no such image|image not known|not found/i.test(message)) {
        throw new StfError('invalid_module', `The image ${image} is not present on the container engine`);
      }
      throw new EngineError(`the container engine refused to create the container: ${message}`, res.status);
    }
    return (res.body as { Id: string }).Id;
  }

  private async execute(
    id: string,
    req: StfRunRequest,
    token: string,
    deadline: number,
    started: number,
    mask: (text: string) => string,
  ): Promise<StfRunResult> {
    const limits = req.limits;
    const logs = new LogCollector(limits.maxLogBytes, mask);
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderrTail = Buffer.alloc(0);
    let stderrLine = '';
    let killedFor: 'timeout' | 'output' | 'closing' | 'cancelled' | null = null;

    const kill = (why: 'timeout' | 'output' | 'closing' | 'cancelled') => {
      if (killedFor) return;
      killedFor = why;
      void this.engine.request('POST', `/containers/${id}/kill?signal=SIGKILL`).catch(() => undefined);
    };
    const demux = new StreamDemuxer((stream, chunk) => {
      if (stream === 'stdout') {
        stdoutBytes += chunk.length;
        if (stdoutBytes > limits.maxOutputBytes) return kill('output');
        stdout.push(Buffer.from(chunk));
        return;
      }
      const lines = (stderrLine + chunk.toString('utf8')).split('\n');
      stderrLine = lines.pop() ?? '';
      if (stderrLine.length > limits.maxLogBytes) stderrLine = stderrLine.slice(0, limits.maxLogBytes);
      for (const line of lines) stderrLineDone(line);
    });
    const stderrLineDone = (line: string) => {
      if (ENGINE_NOISE.test(line)) return;
      logs.push('log', line);
      stderrTail = Buffer.concat([stderrTail, Buffer.from(`${line}\n`)]);
      if (stderrTail.length > STDERR_TAIL_BYTES * 2) stderrTail = stderrTail.subarray(stderrTail.length - STDERR_TAIL_BYTES);
    };

    // podman prepares the container (and finds its command missing) when it is attached to, Docker when started.
    const stream = await this.engine.attach(id).catch((err: unknown) => {
      throw err instanceof EngineError ? commandFailure(err.message, mask) ?? err : err;
    });
    const ended = new Promise<void>((resolve) => {
      stream.on('data', (d: Buffer) => demux.push(d));
      stream.on('end', () => resolve());
      stream.on('close', () => resolve());
      stream.on('error', () => resolve());
    });
    const timer = setTimeout(() => kill('timeout'), Math.max(0, deadline - Date.now()));
    const onClose = () => kill('closing');
    this.closers.add(onClose);
    // Nobody waits for the run any more: the container is killed, as at the deadline, and the run rejects.
    const onCancel = () => kill('cancelled');
    req.signal?.addEventListener('abort', onCancel, { once: true });
    try {
      if (req.signal?.aborted) throw new StfRunCancelled();
      // close() may have come while this run was being prepared, before it could be told.
      if (this.closed) throw new EngineError('the docker runtime was closed during the run');
      const start = await this.engine.request('POST', `/containers/${id}/start`);
      if (start.status !== 204 && start.status !== 304) {
        stream.destroy();
        const message = (start.body as { message?: string } | undefined)?.message ?? `HTTP ${start.status}`;
        const failure = commandFailure(message, mask);
        if (failure) throw failure;
        throw new EngineError(`the container engine could not start the container: ${message}`, start.status);
      }
      // A kill sent while the container was still starting may have found nothing to kill.
      if (killedFor) void this.engine.request('POST', `/containers/${id}/kill?signal=SIGKILL`).catch(() => undefined);
      const document = {
        workspace_id: req.workspaceId ?? null,
        stf_id: req.stfId ?? null,
        caller: req.caller,
        input: req.input ?? null,
        sources: req.sources,
        api_url: API_URL,
        api_socket: API_SOCKET,
        api_token: token,
      };
      stream.on('error', () => undefined);
      stream.end(`${JSON.stringify(document)}\n`);

      const wait = await this.engine.request('POST', `/containers/${id}/wait`, undefined, Math.max(0, deadline - Date.now()) + ENGINE_GRACE_MS);
      await Promise.race([ended, new Promise((r) => setTimeout(r, 1_000))]);
      if (wait.status !== 200) throw new EngineError(`waiting for the container failed: HTTP ${wait.status}`, wait.status);
      const exitCode = Number((wait.body as { StatusCode?: number }).StatusCode ?? -1);
      if (stderrLine) stderrLineDone(stderrLine);
      const tail = () => {
        const text = mask(stderrTail.subarray(Math.max(0, stderrTail.length - STDERR_TAIL_BYTES)).toString('utf8')).trim();
        return text || undefined;
      };
      const fail = (kind: StfError['kind'], message: string, details?: string): never => {
        throw new StfError(kind, mask(message), details, logs.close());
      };

      if (killedFor === 'closing') throw new EngineError('the docker runtime was closed during the run');
      if (killedFor === 'cancelled') throw new StfRunCancelled();
      if (killedFor === 'timeout') fail('timeout', `The STF ran longer than ${limits.timeoutMs} ms`, 'the container was killed');
      if (killedFor === 'output') {
        fail('output_too_large', `The STF printed more than ${limits.maxOutputBytes} bytes on stdout (maxOutputBytes)`, 'the container was killed');
      }
      if (exitCode === 137) {
        const state = (await this.engine.request('GET', `/containers/${id}/json`).catch(() => undefined))?.body as
          | { State?: { OOMKilled?: boolean } }
          | undefined;
        fail(
          'memory',
          `The container was killed (exit 137)${state?.State?.OOMKilled ? ' for exceeding' : ', most likely for exceeding'} its memory limit of ${Math.round(limits.memoryBytes / 1048576)} MiB`,
          tail(),
        );
      }
      const printed = Buffer.concat(stdout).toString('utf8');
      if (exitCode !== 0) {
        // Programs written for the origin platform print {"error": "…", "type": "…"} on stdout before exiting 1.
        const reported = parseErrorDocument(printed);
        fail('runtime', `The container exited with code ${exitCode}${reported ? `: ${reported}` : ''}`, tail());
      }
      const output = parseOutput(printed);
      if (!output.ok) fail('invalid_output', output.message, mask(output.sample));
      return { output: output.ok ? output.value : null, logs: logs.close(), duration_ms: Date.now() - started };
    } finally {
      clearTimeout(timer);
      this.closers.delete(onClose);
      req.signal?.removeEventListener('abort', onCancel);
      stream.destroy();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.slots.close(new EngineError('the docker runtime is closed'));
    for (const close of this.closers) close();
    const dir = this.baseDir ? await this.baseDir.catch(() => undefined) : undefined;
    // Runs finish their own clean-up; wait briefly for them, then remove what is left.
    for (let i = 0; i < 50 && this.active.size > 0; i++) await new Promise((r) => setTimeout(r, 100));
    if (dir) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** The engine's refusal to start because of the STF's command (not found, not executable), as the user's failure. */
function commandFailure(message: string, mask: (text: string) => string): StfError | undefined {
  if (!/executable file .*not found|no such file or directory|permission denied/i.test(message)) return undefined;
  const reason = /(executable file [^:]*not found[^:]*|no such file or directory|permission denied)/i.exec(message)?.[1] ?? message;
  return new StfError('runtime', `The container could not start its command: ${mask(reason)}`, mask(message));
}

/** The `error` (with its `type`) of the last `{"error": "…"}` document on stdout, clipped; undefined if none. */
export function parseErrorDocument(text: string): string | undefined {
  for (const candidate of [text, ...text.split('\n').reverse()]) {
    const trimmed = candidate.trim();
    if (!trimmed.startsWith('{')) continue;
    try {
      const doc = JSON.parse(trimmed) as { error?: unknown; type?: unknown } | null;
      if (doc && typeof doc === 'object' && typeof doc.error === 'string' && doc.error) {
        const text = typeof doc.type === 'string' && doc.type ? `${doc.type}: ${doc.error}` : doc.error;
        return text.length > 1000 ? `${text.slice(0, 1000)}…` : text;
      }
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

type Parsed = { ok: true; value: unknown } | { ok: false; message: string; sample: string };

/** stdout must hold a JSON document with a top-level `output`: all of it, or failing that its last such line. */
export function parseOutput(text: string): Parsed {
  const candidates = [text, ...text.split('\n').reverse()];
  for (const candidate of candidates) {
    const trimmed = candidate.trim();
    if (!trimmed.startsWith('{')) continue;
    try {
      const doc = JSON.parse(trimmed) as unknown;
      if (doc && typeof doc === 'object' && !Array.isArray(doc) && 'output' in doc) {
        return { ok: true, value: (doc as { output: unknown }).output };
      }
    } catch {
      // try the next candidate
    }
  }
  const sample = text.trim().slice(-500);
  return {
    ok: false,
    message: text.trim()
      ? 'The container did not print a JSON document with a top-level "output" on stdout'
      : 'The container printed nothing on stdout (expected a JSON document with a top-level "output")',
    sample,
  };
}
