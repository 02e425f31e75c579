import type { Principal } from '@wds/identity';
import type { Services } from '../services.js';
import type { RequestLimits } from './rate-limit.js';

/** The typed request context: set by middleware and the route wrapper, never by string keys elsewhere. */
export interface AppEnv {
  Variables: {
    requestId: string;
    services: Services;
    principal?: Principal;
    /** The declared operation of the route answering (route.ts `mount`): the request metrics' label. */
    operation?: string;
    /** Set by the rate-limit middleware for every limited request (rate-limit.ts). */
    rateLimits?: RequestLimits;
    /** The body limit of the request, recorded by limitBody (body-limit.ts) for whoever reads the body. */
    bodyLimit?: number;
  };
}
