import { runProcess } from './process-main.js';
import { startWorker } from './worker.js';

/** The worker process's main (apps/worker runs this; in the container image: `node dist/worker-main.js`). */
runProcess(startWorker);
