import { runProcess } from './process-main.js';
import { startServer } from './server.js';

runProcess(startServer);
