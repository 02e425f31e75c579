/**
 * The relay of a docker STF run: a small container that owns the run's network namespace and gives the STF an HTTP
 * address for the SQL callback without giving it a network.
 *
 * It is created with `NetworkMode: "none"` (its namespace has a loopback interface and nothing else), listens on
 * 127.0.0.1:RELAY_PORT there, and copies every connection byte for byte, both ways, to the run's Unix socket
 * (api-socket.ts), bind-mounted read-only at /stf like in the STF container. The STF container joins that namespace
 * (`NetworkMode: "container:<relay id>"`), so `http://127.0.0.1:8080` reaches the run's API and nothing reaches
 * off the host: there is no interface but lo and no route. The relay checks nothing itself — the server behind the
 * socket checks the token, the path and the workspace — and it runs with the same hardening as the STF container.
 *
 * The program is passed to `node -e`, so the relay image needs `node` (Node ≥ 18) on its PATH and nothing else:
 * `localhost/wds-node:<node version>-2` (scripts/container-engine.sh) by default, or the service's own image.
 */
import { MAX_CONNECTIONS } from './api-socket.js';
import { ATTACHED_STDIO, type EngineClient, EngineError, hardenedHostConfig, StreamDemuxer } from './engine.js';

/** The TCP port the relay listens on inside the run's namespace (unprivileged: every capability is dropped). */
export const RELAY_PORT = 8080;
/** The line the relay prints once it listens. */
export const RELAY_READY = 'wds-relay ready';

/** The relay program: plain CommonJS for `node -e`, configured by its environment. */
export const RELAY_PROGRAM = `
const net = require('node:net');
const port = Number(process.env.WDS_RELAY_PORT);
const target = process.env.WDS_RELAY_SOCKET;
const server = net.createServer({ allowHalfOpen: true }, (client) => {
  const api = net.connect({ path: target, allowHalfOpen: true });
  const drop = () => { client.destroy(); api.destroy(); };
  client.on('error', drop);
  api.on('error', drop);
  client.pipe(api);
  api.pipe(client);
});
// The API socket's own bound: connections past it are closed at once.
server.maxConnections = ${MAX_CONNECTIONS};
server.on('error', (err) => { console.error('wds-relay: ' + err.message); process.exit(1); });
server.listen(port, '127.0.0.1', () => console.log(${JSON.stringify(RELAY_READY)}));
// stdin is the service's attach connection: when it breaks (the service died), nobody owns this run any more.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
`;

/** The default relay image: this machine's node, as scripts/container-engine.sh imports it. */
export function defaultRelayImage(): string {
  return `localhost/wds-node:${process.versions.node}-2`;
}

export interface RelaySpec {
  image: string;
  /** The run directory on the host, mounted read-only at `mount`. */
  runDir: string;
  mount: string;
  /** The socket's path inside the container. */
  socket: string;
  user: string;
  memoryBytes: number;
  pidsLimit: number;
  labels: Record<string, string>;
}

/** Creates the relay container (not started). Returns its id. */
export async function createRelay(engine: EngineClient, spec: RelaySpec): Promise<string> {
  const res = await engine.request('POST', '/containers/create', {
    Image: spec.image,
    Entrypoint: ['node'],
    Cmd: ['-e', RELAY_PROGRAM],
    Env: [`WDS_RELAY_PORT=${RELAY_PORT}`, `WDS_RELAY_SOCKET=${spec.socket}`],
    User: spec.user,
    WorkingDir: '/',
    ...ATTACHED_STDIO,
    Labels: spec.labels,
    HostConfig: hardenedHostConfig({
      network: 'none',
      memoryBytes: spec.memoryBytes,
      pidsLimit: spec.pidsLimit,
      bind: `${spec.runDir}:${spec.mount}:ro`,
    }),
  });
  if (res.status === 201 || res.status === 200) return (res.body as { Id: string }).Id;
  const message = (res.body as { message?: string } | undefined)?.message ?? `HTTP ${res.status}`;
  if (res.status === 404 || /no such image|image not known/i.test(message)) {
    throw new EngineError(
      `the relay image ${spec.image} is not present on the container engine (set STF_DOCKER_RELAY_IMAGE to an image with node on its PATH)`,
      res.status,
    );
  }
  throw new EngineError(`the container engine refused to create the relay container: ${message}`, res.status);
}

export interface StartedRelay {
  /**
   * Closes the attach connection once the caller removed the container. The relay's stdin is that connection: when
   * it breaks without the container being removed (the service's process died), the relay exits, so no relay keeps
   * running for a run nobody owns (removeExpired removes what is left).
   */
  release(): void;
}

/**
 * Starts the relay and resolves once it printed its ready line. Rejects with EngineError when it exits first, or
 * with `onDeadline()`'s error when `deadline` passes (the caller decides: a timeout of the run).
 */
export async function startRelay(engine: EngineClient, id: string, deadline: number, onDeadline: () => Error): Promise<StartedRelay> {
  const stream = await engine.attach(id);
  let out = '';
  let err = '';
  let settle: ((error?: Error) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(error) : resolve());
  });
  // It may settle (the deadline, an early exit) while the start request is still out: awaited below, never unhandled.
  ready.catch(() => undefined);
  const demux = new StreamDemuxer((which, chunk) => {
    if (which === 'stdout') {
      if (out.length < 4096) out += chunk.toString('utf8');
      if (out.includes(`${RELAY_READY}\n`)) settle?.();
    } else if (err.length < 4096) err += chunk.toString('utf8');
  });
  const exited = () => settle?.(new EngineError(`the relay container exited before it was ready${err.trim() ? `: ${err.trim().slice(-1000)}` : ''}`));
  stream.on('data', (d: Buffer) => demux.push(d));
  stream.on('end', exited);
  stream.on('close', exited);
  stream.on('error', exited);
  const timer = setTimeout(() => settle?.(onDeadline()), Math.max(0, deadline - Date.now()));
  try {
    const start = await engine.request('POST', `/containers/${id}/start`);
    if (start.status !== 204 && start.status !== 304) {
      const message = (start.body as { message?: string } | undefined)?.message ?? `HTTP ${start.status}`;
      throw new EngineError(`the container engine could not start the relay container: ${message}`, start.status);
    }
    await ready;
  } catch (e) {
    stream.destroy();
    throw e;
  } finally {
    clearTimeout(timer);
  }
  return {
    release: () => {
      stream.on('error', () => undefined);
      stream.destroy();
    },
  };
}
