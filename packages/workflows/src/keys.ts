/**
 * The Idempotency-Key of an effect step's call (issue 29): a function of what the delivery is — the run's origin (the
 * event, the schedule's tick, the hook delivery, or the run itself when a user asked for it) and the step (its index
 * and effect) — never of the attempt or of the run record that carries it. So a retry after a crash, a resumed run or
 * an event's next run, re-sends with the same key, and a receiver that honours the header performs it once.
 *
 * The workspace and the workflow are part of it, so no two workspaces or workflows share a key; two deliveries (two
 * events on one row, two ticks, two hook deliveries) have two origins. The parts are hashed: the key is `wds-` and 64
 * hex digits (printable ASCII, as effect-runner requires), and says nothing of the run's input, rows or secrets.
 */
import { createHash } from 'node:crypto';

export interface EffectDelivery {
  workspaceId: string;
  workflowId: string;
  /** The run's origin (runOrigin; originOf for a stored run). */
  origin: string;
  /** The effect step's index in `effect_steps`. */
  step: number;
  /** The effect (not its version: a new version of it is still the same delivery). */
  effectId: string;
}

export function effectIdempotencyKey(d: EffectDelivery): string {
  const parts = ['wds-effect-key/1', d.workspaceId, d.workflowId, d.origin, d.step, d.effectId];
  return `wds-${createHash('sha256').update(JSON.stringify(parts)).digest('hex')}`;
}

/** What a run is the delivery of (`workflow_runs.origin`, migration 0021). */
export const runOrigin = {
  /** A trigger's event: every run of it (its retries, a replay) is the same delivery. */
  event: (eventId: string) => `event:${eventId}`,
  /** A schedule's tick. */
  schedule: (scheduleId: string, tick: Date) => `schedule:${scheduleId}@${tick.toISOString()}`,
  /** A hook delivery, by the key it is de-duplicated by (the sender's delivery id, else the MAC it proved). */
  webhook: (hookId: string, deliveryKey: string) => `webhook:${hookId}:${deliveryKey}`,
  /** A run asked for by hand (waiting or async): the run itself. */
  run: (trigger: 'request' | 'async', runId: string) => `${trigger}:${runId}`,
};

/** The origin of a stored run; one recorded before 0021 is its own. */
export const originOf = (r: { id: string; origin: string | null }): string => r.origin ?? `run:${r.id}`;
