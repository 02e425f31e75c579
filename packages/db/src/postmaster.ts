import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Finding and stopping an embedded PostgreSQL server by its data directory, for the start-up check and the
 * watchdog. What a process is comes from /proc (Linux); elsewhere nothing is ever recognised, so nothing is stopped.
 */

/** The setting (a custom GUC on the postmaster's command line) that names the process which started the server. */
export const OWNER_SETTING = 'wds.owner_pid';

interface ProcessInfo {
  comm: string;
  ppid: number;
  args: string[];
}

/** A live (not zombie) process as /proc shows it; undefined when it is gone or cannot be read. */
export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …"; comm may itself contain spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const [state, ppid] = stat.slice(close + 2).split(' ');
    if (state === 'Z' || state === 'X') return undefined;
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return { comm, ppid: Number(ppid), args };
  } catch {
    return undefined;
  }
}

export interface Postmaster {
  pid: number;
  /** Its parent now: the owner while the owner lives, someone else (init, a subreaper) once it is orphaned. */
  ppid: number;
  /** The process that started it, from its command line; undefined for a server started some other way. */
  owner: number | undefined;
}

/**
 * The server that holds pgDir's lock file, when that is a live `postgres` started on exactly this data directory
 * (a PID in a stale lock file may have been reused by any other process).
 */
export function findPostmaster(pgDir: string): Postmaster | undefined {
  let lock: string;
  try {
    lock = readFileSync(path.join(pgDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(lock, 10);
  if (!(pid > 0)) return undefined;
  const info = processInfo(pid);
  if (info?.comm !== 'postgres') return undefined;
  const d = info.args.indexOf('-D');
  if (d < 0 || path.resolve(info.args[d + 1] ?? '') !== path.resolve(pgDir)) return undefined;
  const marker = info.args.find((a) => a.startsWith(`${OWNER_SETTING}=`));
  const owner = marker ? Number(marker.slice(OWNER_SETTING.length + 1)) : undefined;
  return { pid, ppid: info.ppid, owner: owner && owner > 0 ? owner : undefined };
}

/**
 * Whether the server still belongs to a running process. A child keeps its parent until that parent dies, so the
 * owner is alive exactly when it is still the parent. A server without an owner mark counts as owned unless it
 * was left to init: we never stop what we cannot tell is ours.
 */
export const isOwned = (pm: Postmaster): boolean => (pm.owner === undefined ? pm.ppid !== 1 : pm.ppid === pm.owner);

/**
 * Stops a server that is not our child: fast shutdown (SIGINT: sessions are ended, the data is checkpointed), and
 * if it is still there after `fastMs`, immediate shutdown (SIGQUIT: crash recovery at the next start).
 */
export async function stopPostmaster(pid: number, fastMs = 30_000, immediateMs = 10_000): Promise<boolean> {
  for (const [signal, ms] of [['SIGINT', fastMs], ['SIGQUIT', immediateMs]] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return true; // gone already
    }
    for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(100)) {
      if (processInfo(pid)?.comm !== 'postgres') return true;
    }
  }
  return processInfo(pid)?.comm !== 'postgres';
}
