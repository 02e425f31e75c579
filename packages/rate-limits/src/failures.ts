import { isUuid } from '@wds/db';
import { isUnguessableBearer } from '@wds/identity';

/** A webhook delivery (deliver_workflow_hook): its failures are its hook's. */
const HOOK_DELIVERY = /^\/api\/v1\/hooks\/([^/]+)\/?$/;

/** The failure budget a request is charged to: which bucket, under which key, and how a refusal says so. */
export interface FailureBudget {
  kind: 'address' | 'hook';
  key: string;
  message: string;
}

/**
 * A hook delivery's failures are charged to its hook, never to the sender's address: GitHub and Stripe send every
 * tenant's deliveries from a few addresses. Everything else is charged to the client address.
 */
export function failureBudgetOf(method: string, path: string, address: string): FailureBudget {
  const hook = method === 'POST' ? HOOK_DELIVERY.exec(path)?.[1] : undefined;
  if (hook === undefined) return { kind: 'address', key: address, message: 'Too many failed authentication attempts from this address' };
  // One key per real hook id (however spelt); anything else shares one, so junk paths cannot grow the map.
  return { kind: 'hook', key: isUuid(hook) ? hook.toLowerCase() : '?', message: 'Too many wrongly signed deliveries to this hook' };
}

/** What a request presents, as far as the failure budget cares. */
export interface Presented {
  /** An operator's own secret is presented (X-Admin-Token; the metrics token): guessable, so never checked once spent. */
  operatorSecret: boolean;
  authorization: string | undefined;
}

/**
 * Whether a request whose failure budget is spent still has its credential checked, so a valid one gets through
 * and others behind the same address (an office's NAT, a webhook sender's few egress addresses) are not locked out
 * by someone else's failures: yes for what no one can guess — a hook signature, a session token, API key or JWT —
 * and for a request with no credential at all; no for a secret an operator chose, which the budget is there to
 * protect from guessing. A check that fails is then answered as the refusal (429), not a 401.
 */
export function checkedWhenSpent(budget: FailureBudget, r: Presented): boolean {
  if (budget.kind === 'hook') return true;
  if (r.operatorSecret) return false;
  return r.authorization === undefined || isUnguessableBearer(r.authorization);
}
