import { parentPort } from 'node:worker_threads';
import { ServiceError } from '@wds/errors';
import { type Analysis, analyze, loadParser } from '@wds/sql-rewriter';
import type { FromWorker, ToWorker } from './offload-protocol.js';
import { rewriteWith, summarize } from './statement.js';

/** The analysis worker: parses, checks and rewrites long statements so the API's event loop stays free. */
const port = parentPort;
if (!port) throw new Error('offload-worker.js runs as a worker thread');
const analyses = new Map<number, Analysis>();
let nextHandle = 0;

const send = (m: FromWorker) => port.postMessage(m);
const failure = (err: unknown): { code?: string; message: string; details?: string } =>
  err instanceof ServiceError
    ? { code: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) }
    : // A stack overflow on a pathological statement is the statement's fault; anything else is ours.
      err instanceof RangeError
      ? { code: 'UNSUPPORTED', message: 'Unsupported SQL: the statement nests too deeply' }
      : { message: String((err as Error)?.message ?? err) };

port.on('message', async (m: ToWorker) => {
  switch (m.op) {
    case 'analyse':
      try {
        await loadParser();
        const a = analyze(m.sql);
        const handle = ++nextHandle;
        analyses.set(handle, a);
        send({ id: m.id, summary: summarize(a), handle });
      } catch (err) {
        send({ id: m.id, error: failure(err) });
      }
      return;
    case 'rewrite': {
      const a = analyses.get(m.handle);
      if (!a) return send({ id: m.id, error: { message: 'unknown statement handle' } });
      try {
        const catalog = new Map(m.input.catalog.map(([t, cols]) => [t, new Map(cols)]));
        send({ id: m.id, sql: rewriteWith(a, { ...m.input, catalog }) });
      } catch (err) {
        send({ id: m.id, error: failure(err) });
      }
      return;
    }
    case 'release':
      analyses.delete(m.handle);
      return;
  }
});
