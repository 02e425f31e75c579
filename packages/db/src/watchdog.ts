/**
 * The embedded PostgreSQL's watchdog: `node watchdog.js <owner pid> <PostgreSQL data directory>`.
 *
 * startEmbeddedPostgres starts it as a detached child. When its parent (the owner) is gone without stopping the
 * server — kill -9, the OOM killer, a crash — it stops the server the owner had started, so that an orphaned
 * PostgreSQL does not hold the data directory and its port until someone finds it by hand. A clean stop ends the
 * watchdog first.
 */
import { findPostmaster, stopPostmaster } from './postmaster.js';

const POLL_MS = 500;
const owner = Number(process.argv[2]);
const pgDir = process.argv[3];
if (!(owner > 0) || !pgDir) {
  console.error('usage: node watchdog.js <owner pid> <PostgreSQL data directory>');
  process.exit(2);
}

// Our parent changes (to init or a subreaper) exactly when the owner dies; a PID could be reused, this cannot.
const timer = setInterval(async () => {
  if (process.ppid === owner) return;
  clearInterval(timer);
  const pm = findPostmaster(pgDir);
  // Only the server this owner started: a new owner may already have started its own on the same directory.
  if (pm && pm.owner === owner) await stopPostmaster(pm.pid);
  process.exit(0);
}, POLL_MS);
