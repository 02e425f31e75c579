import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist');

test('an error thrown outside every handler is logged and the process keeps running', async () => {
  // The child throws from a timer and rejects a promise nobody awaits, then, once both were logged, proves it is
  // still alive by running one more task.
  const script = `
    import { keepRunningOnStrayErrors } from ${JSON.stringify(join(dist, 'last-resort.js'))};
    let logged = 0;
    keepRunningOnStrayErrors({
      error: (o, msg) => {
        console.log('LOGGED ' + msg + ' ' + o.err.message);
        if (++logged === 2) setImmediate(() => console.log('STILL ALIVE'));
      },
    });
    setTimeout(() => { throw new Error('stray throw'); }, 1);
    Promise.reject(new Error('stray rejection'));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += String(d)));
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  expect(out).toContain('LOGGED uncaught exception (kept running) stray throw');
  expect(out).toContain('LOGGED unhandled rejection (kept running) stray rejection');
  expect(out).toContain('STILL ALIVE');
  expect(code).toBe(0);
});
