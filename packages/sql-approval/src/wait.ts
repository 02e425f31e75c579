import type { Db, SqlProposalRow } from '@wds/db';
import { proposalTopic } from './proposals.js';
import { statusOf } from './views.js';

/** The longest a proposer may wait for a decision in one request (`?wait=`, seconds). */
export const MAX_WAIT_SECONDS = 60;
/** How often a waiter looks again without a notice (a notice lost while the bus reconnects). */
const POLL_MS = 2_000;

/** The part of the invalidation bus a waiter listens to: every process publishes proposal changes on it. */
export interface ProposalBus {
  subscribe(listener: (topic: string) => void): () => void;
}

/** Statuses nothing changes any more: a wait on them answers at once. */
const FINAL = new Set(['executed', 'failed', 'rejected', 'expired']);

/**
 * Waits until the proposal's status differs from the one it has (a decision, the end of its run, or its expiry) or
 * the wait ends, and answers it as it then is; a proposal that can change no more is answered at once. Woken by the proposal's bus topic from any process; looks again every
 * POLL_MS and at its expiry regardless, so a lost notice costs at most that.
 */
export async function waitForChange(
  read: () => Promise<SqlProposalRow>,
  bus: ProposalBus,
  first: SqlProposalRow,
  seconds: number,
  signal?: AbortSignal,
): Promise<SqlProposalRow> {
  const from = statusOf(first);
  if (FINAL.has(from)) return first;
  const deadline = Date.now() + Math.min(Math.max(0, seconds), MAX_WAIT_SECONDS) * 1000;
  let wake: (() => void) | undefined;
  // A notice while the waiter reads (no sleep to end) is not lost: the next sleep is skipped.
  let noticed = false;
  const unsubscribe = bus.subscribe((topic) => {
    if (topic !== proposalTopic(first.id) && topic !== '*') return;
    noticed = true;
    wake?.();
  });
  const onAbort = () => wake?.();
  signal?.addEventListener('abort', onAbort);
  try {
    let row = first;
    for (;;) {
      const left = deadline - Date.now();
      if (statusOf(row) !== from || left <= 0 || signal?.aborted) return row;
      const untilExpiry = row.status === 'pending' ? row.expires_at.getTime() - Date.now() + 5 : Number.POSITIVE_INFINITY;
      if (!noticed) {
        await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.max(1, Math.min(left, POLL_MS, untilExpiry)));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      noticed = false;
      row = await read();
    }
  } finally {
    unsubscribe();
    signal?.removeEventListener('abort', onAbort);
  }
}

export type { Db };
