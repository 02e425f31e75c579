/**
 * The typed client of the service's HTTP API: openapi-fetch over the types openapi-typescript generates from the
 * OpenAPI document (src/openapi.ts; apps/api/test/client.test.ts fails when it is not the document's). Every path,
 * parameter, body and answer is typed from the document, so a program needs no cast and no type of its own.
 *
 *   const api = createWdsClient({ baseUrl: 'http://localhost:3000', token });
 *   const ws = await ok(api.POST('/api/v1/workspaces', { body: { name: 'Support' } }));
 */
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components } from './openapi.js';

export type { components, operations, paths } from './openapi.js';
import type { paths } from './openapi.js';

/** A named view of the API (a schema component of the document): `View<'Workspace'>`, `View<'SqlResult'>`, … */
export type View<Name extends keyof components['schemas']> = components['schemas'][Name];
/** The error body every error answer carries: `{ error, code, details? }`, `code` from the closed set. */
export type ErrorBody = components['schemas']['Error'];
/** The closed set of error codes. */
export type ErrorCode = ErrorBody['code'];

export type WdsClient = Client<paths>;

export interface WdsClientOptions {
  /** Where the service answers, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** A session token (ses_…), an API key (svc_…) or a JWT, sent as `Authorization: Bearer …`. */
  token?: string;
  /** Headers sent with every call (a call's own headers win). */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: ClientOptions['fetch'];
}

/** A client of the API: `client.GET(path, { params, body })`, `client.POST(…)`, … as openapi-fetch has them. */
export function createWdsClient(options: WdsClientOptions): WdsClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), headers, ...(options.fetch ? { fetch: options.fetch } : {}) });
}

const isErrorBody = (body: unknown): body is ErrorBody =>
  typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string' && typeof (body as { error?: unknown }).error === 'string';

/** An error answer of the service, with its status, its code and the request id to quote to the operator. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  /** The error code; undefined only for an answer that is not the service's error body (a proxy's, say). */
  readonly code: ErrorCode | undefined;
  readonly details: string | undefined;
  /** The X-Request-Id of the answer. */
  readonly requestId: string | undefined;
  /** The error body as it came. */
  readonly body: unknown;

  constructor(response: Response, body: unknown) {
    const known = isErrorBody(body) ? body : undefined;
    super(known ? `${response.status} ${known.code}: ${known.error}${known.details ? ` (${known.details})` : ''}` : `${response.status} ${response.statusText}`);
    this.status = response.status;
    this.code = known?.code;
    this.details = known?.details;
    this.requestId = response.headers.get('x-request-id') ?? undefined;
    this.body = body;
  }
}

/** What a call of the client resolves to (openapi-fetch's FetchResponse): its data, or its error, and the response. */
type CallResult = { data?: unknown; error?: unknown; response: Response };
/** The data of the success member of a call's result; undefined for an answer without a body (204). */
type SuccessData<R> = R extends { error?: never; data?: infer D } ? ([D] extends [never] ? undefined : D) : never;

/**
 * The data of a successful call, or an ApiError thrown for an error answer:
 * `const ws = await ok(api.POST('/api/v1/workspaces', { body: { name } }))`.
 */
export async function ok<R extends CallResult>(call: Promise<R>): Promise<SuccessData<R>> {
  const result = await call;
  if (result.error !== undefined || !result.response.ok) throw new ApiError(result.response, result.error);
  // openapi-fetch answers the body it parsed for a success status: the success member's data.
  return result.data as SuccessData<R>;
}
