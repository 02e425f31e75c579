/**
 * Code preloaded (`--import data:…`) into every Extism plugin worker, before the SDK's own worker script.
 *
 * Why: in @extism/extism 2.0.0-rc13 a failure while the worker instantiates the module (a trap in the start
 * function or `_initialize`, a data segment out of bounds, a missing import) is an unhandled rejection in the
 * worker, so the worker dies with an 'error' event nobody listens to, which crashes the whole host process. Here
 * such a failure is reported as a message of an unexpected type, which makes `createPlugin` reject with
 * `received unexpected message (type=stf-worker-failure: <message>)`, and the worker exits.
 *
 * Log lines sent before the worker is ready are dropped: the SDK would otherwise take them for an unexpected
 * message too (and leak the worker).
 */
export const WORKER_FAILURE_TYPE = 'stf-worker-failure';

const PRELOAD_SOURCE = `
import { parentPort } from 'node:worker_threads';
const post = parentPort.postMessage.bind(parentPort);
let ready = false;
parentPort.postMessage = (message, transfer) => {
  if (message && message.type === 'ready') ready = true;
  if (!ready && message && message.type === 'log') return;
  return post(message, transfer);
};
const fail = (err) => {
  let text;
  try { text = err && typeof err.message === 'string' ? err.message : String(err); } catch { text = 'unknown error'; }
  try { post({ type: '${WORKER_FAILURE_TYPE}: ' + text }); } finally { process.exit(1); }
};
process.on('unhandledRejection', fail);
process.on('uncaughtException', fail);
`;

export const WORKER_EXEC_ARGV: readonly string[] = [
  '--disable-warning=ExperimentalWarning',
  `--import=data:text/javascript,${encodeURIComponent(PRELOAD_SOURCE)}`,
];

/** The worker's failure message, if `err` is the SDK's rejection for a failure reported by the preload. */
export function workerFailureMessage(err: unknown): string | undefined {
  const message = err instanceof Error ? err.message : undefined;
  const match = message?.match(/\(type=stf-worker-failure: ([\s\S]*)\)$/);
  return match?.[1];
}
