/**
 * The closed set of error codes the service answers with, and the HTTP status of each.
 * Library code throws `ServiceError`; only the HTTP edge turns it into a response.
 */
export const ERROR_STATUS = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  LAST_ADMIN: 400,
  PARSE_ERROR: 400,
  INVALID_TABLE: 400,
  UNSUPPORTED: 400,
  SCHEMA_ACCESS_DENIED: 400,
  TRANSACTION_NOT_ALLOWED: 400,
  MULTIPLE_STATEMENTS: 400,
  EXECUTION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  POLICY_DENIED: 403,
  DDL_FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RUNTIME_ERROR: 422,
  TOO_MANY_REQUESTS: 429,
  INTERNAL_ERROR: 500,
  UPSTREAM_ERROR: 502,
  EMBEDDING_API_ERROR: 502,
  SERVICE_UNAVAILABLE: 503,
  /** An MCP tool call past the workspace's mcp_timeout_ms (nothing of it is kept). */
  TIMEOUT: 504,
  EMBEDDING_NOT_CONFIGURED: 503,
  MODEL_NOT_MULTIMODAL: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

/** The one error body of the public API. */
export interface ErrorBody {
  error: string;
  code: ErrorCode;
  details?: string;
}

export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly details: string | undefined;
  /** Seconds after which trying again may succeed (a 429 or 503): the edge sends it as `Retry-After`. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, details?: string, options: { retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.details = details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): ErrorStatus {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { error: this.message, code: this.code }
      : { error: this.message, code: this.code, details: this.details };
  }
}

export const isServiceError = (e: unknown): e is ServiceError => e instanceof ServiceError;

/** Shorthands for the errors every package raises. */
export const badRequest = (message: string, details?: string) => new ServiceError('BAD_REQUEST', message, details);
export const validationError = (details: string, message = 'Invalid request') =>
  new ServiceError('VALIDATION_ERROR', message, details);
export const notFound = (what: string) => new ServiceError('NOT_FOUND', `${what} not found`);
export const forbidden = (message = 'Forbidden', details?: string) => new ServiceError('FORBIDDEN', message, details);
export const unauthorized = (message = 'Missing or invalid token') => new ServiceError('UNAUTHORIZED', message);
export const conflict = (message: string, details?: string) => new ServiceError('CONFLICT', message, details);

/** The body for an error that is not a ServiceError: never its message or stack. */
export const internalErrorBody = (requestId?: string): ErrorBody => ({
  error: 'Internal server error',
  code: 'INTERNAL_ERROR',
  ...(requestId ? { details: `request id ${requestId}` } : {}),
});
