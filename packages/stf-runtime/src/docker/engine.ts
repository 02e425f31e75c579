/**
 * The few calls of the Docker Engine API the docker runtime needs, over `node:http` (podman's Docker-compatible
 * service and Docker both answer them). No SDK: dockerode's attach sends its own options as the stdin payload on
 * podman, and input must reach the container on stdin (docs/stfs.md#the-docker-runtime).
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { StfRuntimeUnavailable } from '../types.js';

const API_VERSION = 'v1.41';

/** Where the engine listens: `unix:///path/to.sock` or `tcp://host:port` (plain HTTP). */
export type EngineAddress = { socketPath: string } | { host: string; port: number };

export function parseDockerHost(value: string): EngineAddress {
  const trimmed = value.trim();
  if (trimmed.startsWith('unix://')) {
    const socketPath = trimmed.slice('unix://'.length);
    if (!socketPath.startsWith('/')) throw new Error(`DOCKER_HOST: expected unix:///absolute/path, got ${value}`);
    return { socketPath };
  }
  if (trimmed.startsWith('tcp://') || trimmed.startsWith('http://')) {
    const url = new URL(trimmed.replace(/^tcp:/, 'http:'));
    return { host: url.hostname, port: Number(url.port || 2375) };
  }
  throw new Error(`DOCKER_HOST: expected unix:///path or tcp://host:port, got ${value}`);
}

/** The engine could not be reached or answered something unexpected (not a failure of the user's code). */
export class EngineError extends StfRuntimeUnavailable {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export interface EngineResponse {
  status: number;
  body: unknown;
}

export class EngineClient {
  constructor(readonly address: EngineAddress) {}

  private options(method: string, path: string, headers: Record<string, string> = {}): http.RequestOptions {
    return { ...this.address, method, path: `/${API_VERSION}${path}`, headers: { host: 'docker', ...headers } };
  }

  /** One JSON request; the body is parsed when it is JSON. Network failures become EngineError. */
  request(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<EngineResponse> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = http.request(
        this.options(method, path, payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('error', (err) => reject(new EngineError(`container engine: ${err.message}`)));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            if ((res.headers['content-type'] ?? '').includes('json') && text) {
              try {
                parsed = JSON.parse(text);
              } catch {
                // keep the text
              }
            }
            resolve({ status: res.statusCode ?? 0, body: parsed });
          });
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (err) => reject(new EngineError(`container engine unreachable: ${err.message}`)));
      req.end(payload);
    });
  }

  /** Like request, but any status outside 2xx is an EngineError carrying the engine's message. */
  async call(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<unknown> {
    const res = await this.request(method, path, body, timeoutMs);
    if (res.status < 200 || res.status >= 300) throw new EngineError(engineMessage(res), res.status);
    return res.body;
  }

  /**
   * Attaches to a created (not yet started) container's stdin, stdout and stderr: the HTTP connection is upgraded
   * to a raw stream; writes go to stdin (ending the stream closes stdin), reads are the multiplexed output.
   */
  attach(id: string): Promise<Duplex> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        this.options('POST', `/containers/${id}/attach?stream=1&stdin=1&stdout=1&stderr=1`, {
          connection: 'Upgrade',
          upgrade: 'tcp',
        }),
      );
      req.on('upgrade', (_res, socket, head) => {
        if (head.length > 0) socket.unshift(head);
        resolve(socket);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          reject(new EngineError(`attach refused: ${engineMessage({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() })}`, res.statusCode)),
        );
      });
      req.on('error', (err) => reject(new EngineError(`container engine unreachable: ${err.message}`)));
      req.end();
    });
  }
}

function engineMessage(res: EngineResponse): string {
  const body = res.body;
  if (body && typeof body === 'object' && 'message' in body && typeof body.message === 'string') return body.message;
  if (typeof body === 'string' && body.trim()) {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') return parsed.message;
    } catch {
      // not JSON
    }
    return body.trim().slice(0, 500);
  }
  return `HTTP ${res.status}`;
}

/**
 * Splits the engine's multiplexed stream (8-byte frame headers: stream type, 3 zero bytes, big-endian length)
 * into stdout and stderr chunks. A frame's payload is passed on as it arrives, so a huge frame is never buffered.
 */
export class StreamDemuxer {
  private header = Buffer.alloc(0);
  private remaining = 0;
  private stream: 'stdout' | 'stderr' | null = null;

  constructor(private readonly onChunk: (stream: 'stdout' | 'stderr', chunk: Buffer) => void) {}

  push(data: Buffer): void {
    let rest = data;
    while (rest.length > 0) {
      if (this.remaining === 0) {
        const need = 8 - this.header.length;
        this.header = Buffer.concat([this.header, rest.subarray(0, need)]);
        rest = rest.subarray(need);
        if (this.header.length < 8) return;
        const type = this.header[0];
        this.stream = type === 2 ? 'stderr' : type === 0 || type === 1 ? 'stdout' : null;
        this.remaining = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
        continue;
      }
      const take = Math.min(this.remaining, rest.length);
      if (this.stream) this.onChunk(this.stream, rest.subarray(0, take));
      this.remaining -= take;
      rest = rest.subarray(take);
    }
  }
}

/** Every container of a run reads its stdin from, and writes its output to, the attach connection (no TTY). */
export const ATTACHED_STDIO = {
  OpenStdin: true,
  StdinOnce: true,
  AttachStdin: true,
  AttachStdout: true,
  AttachStderr: true,
  Tty: false,
} as const;

/**
 * The network of a run's container: `none` (the relay: a loopback interface only), or the namespace of the run's
 * relay, which itself has none. There is no third choice, so no container of a run ever gets a route off the host.
 */
export type RunNetwork = 'none' | { relay: string };

/**
 * The HostConfig every container of a run gets — the STF's and its relay's: no capabilities, no new privileges, a
 * read-only root filesystem, memory (swap included) and process limits, the run's directory mounted read-only, and
 * the run's network (RunNetwork). One place, so the two cannot drift apart.
 */
export function hardenedHostConfig(opts: {
  network: RunNetwork;
  memoryBytes: number;
  pidsLimit: number;
  /** `<host dir>:<container dir>:ro`. */
  bind: string;
  tmpfs?: Record<string, string>;
}): Record<string, unknown> {
  return {
    NetworkMode: opts.network === 'none' ? 'none' : `container:${opts.network.relay}`,
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    Privileged: false,
    Memory: opts.memoryBytes,
    MemorySwap: opts.memoryBytes,
    PidsLimit: opts.pidsLimit,
    Binds: [opts.bind],
    ...(opts.tmpfs ? { Tmpfs: opts.tmpfs } : {}),
    AutoRemove: false,
  };
}
