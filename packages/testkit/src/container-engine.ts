import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../scripts/container-engine.sh', import.meta.url));

export interface TestContainerEngine {
  /** `unix:///…/podman.sock`: the value for DOCKER_HOST. */
  dockerHost: string;
  /** Local images the engine holds (built from this machine's files; no registry is used). */
  images: { busybox: string; node: string };
  /** Stops the service if this call started it. */
  stop(): Promise<void>;
}

async function script(command: 'start' | 'stop' | 'status'): Promise<string> {
  const { stdout } = await run('bash', [SCRIPT, command], { timeout: 10 * 60_000, maxBuffer: 1024 * 1024 });
  return stdout;
}

/**
 * Podman's Docker-compatible service for tests of the docker runtime (scripts/container-engine.sh: installs podman
 * when missing, imports the local images, starts the service). A service that is already running is reused and
 * left running.
 */
export async function startContainerEngine(): Promise<TestContainerEngine> {
  const wasRunning = await script('status').then(
    () => true,
    () => false,
  );
  let out: string;
  try {
    out = await script('start');
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`could not start the container engine for the docker runtime's tests: ${e.stderr?.trim() || e.message}`);
  }
  const dockerHost = /DOCKER_HOST=(\S+)/.exec(out)?.[1];
  if (!dockerHost) throw new Error(`scripts/container-engine.sh start printed no DOCKER_HOST: ${out}`);
  return {
    dockerHost,
    images: { busybox: 'localhost/wds-busybox:2', node: `localhost/wds-node:${process.versions.node}-2` },
    stop: async () => {
      if (!wasRunning) await script('stop');
    },
  };
}
