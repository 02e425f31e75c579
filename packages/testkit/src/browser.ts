import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../../scripts/browser.sh', import.meta.url));

let found: Promise<string> | undefined;

/**
 * The executable of a headless Chromium for browser tests (drive it with playwright-core's
 * `chromium.launch({ executablePath })`): scripts/browser.sh finds Debian's `chromium`, installing it with apt-get
 * when missing (as root; CI's bootstrap runs as root on Debian), or takes WDS_CHROMIUM. Once per process.
 */
export function chromiumPath(): Promise<string> {
  found ??= run('bash', [SCRIPT], { timeout: 10 * 60_000, maxBuffer: 1024 * 1024 }).then(
    ({ stdout }) => {
      const path = /CHROMIUM=(\S+)/.exec(stdout)?.[1];
      if (!path) throw new Error(`scripts/browser.sh printed no CHROMIUM=: ${stdout}`);
      return path;
    },
    (err: { stderr?: string; message: string }) => {
      found = undefined;
      throw new Error(`could not find or install chromium for the browser tests: ${err.stderr?.trim() || err.message}`);
    },
  );
  return found;
}

/**
 * Launch arguments that keep a test browser on this machine: running as root needs --no-sandbox, and every host
 * but 127.0.0.1 resolves to nothing and is sent to a proxy that does not exist (an address literal too).
 */
export const CHROMIUM_LOOPBACK_ARGS: readonly string[] = [
  '--no-sandbox',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
  '--proxy-server=http://127.0.0.1:9',
  '--proxy-bypass-list=127.0.0.1',
  '--no-first-run',
  '--disable-sync',
  '--disable-component-update',
  '--disable-domain-reliability',
];
