import { ServiceError } from '@wds/errors';
import type { Principal } from '@wds/identity';
import {
  type Clock,
  type FailureBudget,
  type Presented,
  type RateDecision,
  RateLimiter,
  addressKey,
  checkedWhenSpent,
  failureBudgetOf,
  forwardedAddress,
} from '@wds/rate-limits';
import type { Context, MiddlewareHandler } from 'hono';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';
import type { AppEnv } from './env.js';
import { METRICS_PATH } from './metrics.js';

type RateLimitConfig = Pick<
  Config,
  'RATE_LIMIT_PER_PRINCIPAL' | 'RATE_LIMIT_PER_WORKSPACE' | 'RATE_LIMIT_AUTH_FAILURES_PER_IP' | 'RATE_LIMIT_MAX_KEYS' | 'TRUST_PROXY'
>;

/**
 * The request budgets of one API process (`services.rateLimits`: the HTTP routes, MCP and the WebSocket upgrade all
 * charge the same ones). State is in memory, so with N processes behind a load balancer a caller may get up to N
 * times each limit: the price of never making a round trip to shared state on every request.
 */
export class RateLimits {
  /** Per API key, else per user (sessions, JWTs), else per client address (anonymous calls). */
  readonly callers: RateLimiter | undefined;
  /** All callers of one workspace together. */
  readonly workspaces: RateLimiter | undefined;
  /** Failed authentications (401) per client address. */
  readonly failures: RateLimiter | undefined;
  /** Wrongly signed deliveries (401) per hook: never charged to the sender's address, which many tenants share. */
  readonly hookFailures: RateLimiter | undefined;
  readonly trustProxy: number;

  constructor(config: RateLimitConfig, now?: Clock) {
    const limiter = (perMinute: number) =>
      perMinute > 0 ? new RateLimiter({ perMinute, maxKeys: config.RATE_LIMIT_MAX_KEYS, ...(now ? { now } : {}) }) : undefined;
    this.callers = limiter(config.RATE_LIMIT_PER_PRINCIPAL);
    this.workspaces = limiter(config.RATE_LIMIT_PER_WORKSPACE);
    this.failures = limiter(config.RATE_LIMIT_AUTH_FAILURES_PER_IP);
    this.hookFailures = limiter(config.RATE_LIMIT_AUTH_FAILURES_PER_IP);
    this.trustProxy = config.TRUST_PROXY;
  }
}

/** Probes of load balancers and orchestrators: never limited. */
const EXEMPT = new Set(['/healthz', '/readyz']);

/** One request's standing against the budgets (the context's `rateLimits`). */
export interface RequestLimits {
  limits: RateLimits;
  address: string;
  /** The admin interface has no per-caller or per-workspace budget; its failed tokens still count. */
  admin: boolean;
  /** Where a failed authentication of this request is charged (its address, or the hook it delivers to), if anywhere. */
  failures: (FailureBudget & { limiter: RateLimiter }) | undefined;
  /** The failed-authentication charge held while the credential is being checked. */
  reservation: RateDecision | undefined;
  /** Set when that budget was already spent but the credential is checked all the same (see `checkedWhenSpent`). */
  spent: RateDecision | undefined;
  /** The budget with the least left, shown in the RateLimit-* headers. */
  shown: { limiter: RateLimiter; decision: RateDecision } | undefined;
  chargedWorkspace: string | undefined;
}

/**
 * Guards every route but the health probes against failed-authentication floods from one client address (or to
 * one hook), and makes the per-caller and per-workspace budgets (charged by `limitCaller` and `limitWorkspace`)
 * available.
 */
export function rateLimit(limits: RateLimits): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (EXEMPT.has(c.req.path)) return next();
    const address = clientAddress(c, limits.trustProxy);
    const r: RequestLimits = {
      limits,
      address,
      admin: c.req.path.startsWith('/admin/'),
      failures: undefined,
      reservation: undefined,
      spent: undefined,
      shown: undefined,
      chargedWorkspace: undefined,
    };
    const budget = failureBudget(limits, c.req.method, c.req.path, address);
    r.failures = budget;
    c.set('rateLimits', r);
    if (budget) {
      // Given back as soon as the credential proves valid, or when the answer is not a 401.
      const start = startCheck(budget, {
        operatorSecret: c.req.header('x-admin-token') !== undefined || c.req.path === METRICS_PATH,
        authorization: c.req.header('authorization'),
      });
      r.reservation = start.reservation;
      r.spent = start.spent;
      if (start.refused) throw refuse(c, r, budget.limiter, start.refused, budget.message, FAILURES_SETTING);
    }
    await next();
    if (budget && c.res.status === 401) {
      if (r.spent) {
        const refusal = refuse(c, r, budget.limiter, r.spent, budget.message, FAILURES_SETTING);
        c.res = c.json(refusal.toBody(), 429);
      } else tighter(r, budget.limiter, r.reservation ?? budget.limiter.take(budget.key));
    } else if (budget && r.reservation) budget.limiter.refund(budget.key);
    // On the final response: a handler may have answered with a Response of its own, without the context's headers.
    writeHeaders(c, r);
  };
}

const FAILURES_SETTING = 'RATE_LIMIT_AUTH_FAILURES_PER_IP';

/** The failure budget a request is charged to (its address's, or its hook's), with its limiter; none when off. */
function failureBudget(limits: RateLimits, method: string, path: string, address: string): (FailureBudget & { limiter: RateLimiter }) | undefined {
  const of = failureBudgetOf(method, path, address);
  const limiter = of.kind === 'hook' ? limits.hookFailures : limits.failures;
  return limiter && { ...of, limiter };
}

/**
 * A credential check as it starts: one unit is taken before the credential is even looked at, so a flood of
 * parallel guesses cannot all slip past an almost spent budget. Past the budget the credential is checked all the
 * same (`spent`: its failure is then answered as the refusal) or not at all (`refused`), as `checkedWhenSpent` says.
 */
function startCheck(budget: FailureBudget & { limiter: RateLimiter }, presented: Presented): { reservation?: RateDecision; spent?: RateDecision; refused?: RateDecision } {
  const d = budget.limiter.take(budget.key);
  if (d.allowed) return { reservation: d };
  return checkedWhenSpent(budget, presented) ? { spent: d } : { refused: d };
}

/**
 * Checks a credential presented outside the HTTP routes — the WebSocket upgrade, which Node hands to a listener of
 * its own — against the same failed-authentication budget as `rateLimit`, with the same answers: a unit is held while
 * `check` runs and kept when it fails with a 401; past the budget a credential no one can guess is still checked (a
 * failure is then the 429 refusal), anything else is refused unchecked. `authorization` is the credential as an
 * Authorization header would carry it, wherever it came from (header or query).
 */
export async function checkCredential<T>(
  limits: RateLimits,
  request: { method: string; path: string; address: string; authorization: string | undefined },
  check: () => Promise<T>,
): Promise<T> {
  const budget = failureBudget(limits, request.method, request.path, request.address);
  if (!budget) return check();
  const start = startCheck(budget, { operatorSecret: false, authorization: request.authorization });
  const refusal = (d: RateDecision) => refusalError(budget.limiter, d, budget.message, FAILURES_SETTING);
  if (start.refused) throw refusal(start.refused);
  try {
    const result = await check();
    if (start.reservation) budget.limiter.refund(budget.key);
    return result;
  } catch (err) {
    const failed = err instanceof ServiceError && err.status === 401;
    if (!failed && start.reservation) budget.limiter.refund(budget.key);
    throw failed && start.spent ? refusal(start.spent) : err;
  }
}

/**
 * Called once the credential is checked: releases the failure reservation, then charges the caller's budget. With
 * `holdFailure` (a route that checks a credential in its input, such as a login link's code) the reservation stays
 * held until the answer, which settles it as for any credential: kept on a 401, given back otherwise.
 */
export function limitCaller(c: Context<AppEnv>, principal: Principal | undefined, opts: { holdFailure?: boolean } = {}): void {
  const r = c.get('rateLimits');
  if (!r) return;
  if (r.reservation && !opts.holdFailure) {
    r.failures?.limiter.refund(r.failures.key);
    r.reservation = undefined;
  }
  const { callers } = r.limits;
  if (!callers || r.admin) return;
  const [key, who] =
    principal === undefined
      ? [`ip:${r.address}`, 'this client address']
      : principal.apiKeyId !== null
        ? [`key:${principal.apiKeyId}`, 'this API key']
        : [`user:${principal.user.id}`, 'this user'];
  charge(c, r, callers, key, `Rate limit of ${who} exceeded`, 'RATE_LIMIT_PER_PRINCIPAL');
}

/**
 * Called once a member's access to a workspace is resolved, so only its members can spend a workspace's budget;
 * once per request.
 */
export function limitWorkspace(c: Context<AppEnv>, workspaceId: string): void {
  const r = c.get('rateLimits');
  if (!r || r.admin || !r.limits.workspaces || r.chargedWorkspace === workspaceId) return;
  r.chargedWorkspace = workspaceId;
  charge(c, r, r.limits.workspaces, workspaceId, 'Rate limit of this workspace exceeded', 'RATE_LIMIT_PER_WORKSPACE');
}

function charge(c: Context<AppEnv>, r: RequestLimits, limiter: RateLimiter, key: string, message: string, setting: string): void {
  const d = limiter.take(key);
  if (!d.allowed) throw refuse(c, r, limiter, d, message, setting);
  tighter(r, limiter, d);
}

function refuse(c: Context<AppEnv>, r: RequestLimits, limiter: RateLimiter, d: RateDecision, message: string, setting: string) {
  const error = refusalError(limiter, d, message, setting);
  tighter(r, limiter, d);
  writeHeaders(c, r);
  c.header('Retry-After', String(error.retryAfterSeconds));
  return error;
}

/** The 429 of a spent budget: which one (`message`), its setting, and when one more request is allowed. */
function refusalError(limiter: RateLimiter, d: RateDecision, message: string, setting: string): ServiceError {
  const seconds = Math.max(1, Math.ceil(d.retryAfterMs / 1000));
  return new ServiceError('TOO_MANY_REQUESTS', message, `${limiter.perMinute} per minute (${setting}); retry after ${seconds} s`, { retryAfterSeconds: seconds });
}

/** Keeps the decision to show: a refusal, else the budget with the least left. */
function tighter(r: RequestLimits, limiter: RateLimiter, decision: RateDecision): void {
  const shown = r.shown?.decision;
  if (!shown || !decision.allowed || (shown.allowed && decision.remaining < shown.remaining)) r.shown = { limiter, decision };
}

/** RateLimit-* headers (IETF draft-ietf-httpapi-ratelimit-headers, the separate-fields form). */
function writeHeaders(c: Context<AppEnv>, r: RequestLimits): void {
  if (!r.shown) return;
  const { limiter, decision: d } = r.shown;
  c.header('RateLimit-Limit', String(d.limit));
  c.header('RateLimit-Remaining', String(d.remaining));
  c.header('RateLimit-Reset', String(Math.ceil(d.resetMs / 1000)));
  c.header('RateLimit-Policy', `${d.limit};w=${limiter.windowSeconds}`);
}

/** The client's address (budget key): the one trusted proxies saw (TRUST_PROXY, `forwardedAddress`), else the socket's. */
export function clientAddress(c: Context<AppEnv>, trustProxy: number): string {
  return forwardedAddress(c.req.header('x-forwarded-for'), trustProxy) ?? socketAddress(c) ?? 'unknown';
}

/** The same address for a request Node hands to its `upgrade` listener (GET /ws). */
export function upgradeAddress(req: IncomingMessage, trustProxy: number): string {
  const forwarded = req.headers['x-forwarded-for'];
  return forwardedAddress(Array.isArray(forwarded) ? forwarded.join(',') : forwarded, trustProxy) ?? socketKey(req.socket) ?? 'unknown';
}

/** socket → the budget key of its remote address: a keep-alive connection's requests work it out once. */
const socketKeys = new WeakMap<Socket, string>();

/** The budget key of the request's socket address; undefined without one (in-process requests, app.request in tests). */
function socketAddress(c: Context<AppEnv>): string | undefined {
  // What @hono/node-server's getConnInfo reads, without building its object on every request.
  const env = c.env as { server?: NodeBindings; incoming?: NodeBindings['incoming'] } | undefined;
  const socket = (env?.server ?? env)?.incoming?.socket;
  return socket ? socketKey(socket) : undefined;
}

function socketKey(socket: Socket): string | undefined {
  let key = socketKeys.get(socket);
  if (key === undefined) {
    const address = socket.remoteAddress;
    if (address === undefined) return undefined;
    key = addressKey(address);
    socketKeys.set(socket, key);
  }
  return key;
}

interface NodeBindings {
  incoming?: { socket?: Socket };
}
