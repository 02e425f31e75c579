import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** apps/api, where `dist/main.js` is. */
export const appDir = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The built server as a process (node dist/main.js), the way it runs in production. */
export interface ApiProcess {
  url: string;
  proc: ChildProcess;
  /** Its output lines (the last 400) and stderr. */
  logs: string[];
  /** Its exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Every process `startApiProcess` started, for `killApiProcesses` in an afterAll. */
const started: ApiProcess[] = [];

/**
 * Starts `node dist/main.js` with exactly `env` (nothing of this process's environment unless the caller passes it)
 * and waits for its `listening` line; rejects with its output if it exits first.
 */
export async function startApiProcess(env: Record<string, string | undefined>): Promise<ApiProcess> {
  const proc = spawn(process.execPath, ['dist/main.js'], { cwd: appDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const exited = new Promise<number | null>((done) => proc.on('exit', (code) => done(code)));
  const api: ApiProcess = { url: '', proc, logs, exited };
  started.push(api);
  proc.stderr?.on('data', (d) => logs.push(String(d)));
  let buffered = '';
  api.url = await new Promise<string>((ok, fail) => {
    proc.stdout?.on('data', (d) => {
      buffered += String(d);
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        logs.push(line);
        if (logs.length > 400) logs.shift();
        if (line.includes('"msg":"listening"')) ok(JSON.parse(line).url);
      }
    });
    void exited.then((code) => fail(new Error(`the server exited with ${code}:\n${logs.join('\n')}`)));
  });
  return api;
}

/** Kills (-9) every server process still running and waits for them. */
export async function killApiProcesses(): Promise<void> {
  for (const a of started) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
  await Promise.all(started.map((a) => a.exited));
}

/** Polls `check` every 100 ms until it gives a value (not undefined or false); throws after `ms`. */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await Promise.resolve()
      .then(check)
      .catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `node <args>` in apps/api (the built CLI) with `env` over this process's, to its exit: code and output. */
export function runNode(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const p = spawn(process.execPath, args, { cwd: appDir, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout?.on('data', (d) => (stdout += d));
    p.stderr?.on('data', (d) => (stderr += d));
    p.on('exit', (code) => ok({ code, stdout, stderr }));
  });
}
