import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, ServiceError, internalErrorBody, validationError } from '../src/index.js';

describe('ServiceError', () => {
  it('maps every code to its documented status', () => {
    expect(new ServiceError('POLICY_DENIED', 'x').status).toBe(403);
    expect(new ServiceError('LAST_ADMIN', 'x').status).toBe(400);
    expect(new ServiceError('EMBEDDING_NOT_CONFIGURED', 'x').status).toBe(503);
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      expect(new ServiceError(code as keyof typeof ERROR_STATUS, 'm').status).toBe(status);
    }
  });

  it('renders the one envelope, with details only when present', () => {
    expect(new ServiceError('NOT_FOUND', 'Workspace not found').toBody()).toEqual({
      error: 'Workspace not found',
      code: 'NOT_FOUND',
    });
    expect(validationError('name: too long').toBody()).toEqual({
      error: 'Invalid request',
      code: 'VALIDATION_ERROR',
      details: 'name: too long',
    });
  });

  it('never exposes internals for unknown errors', () => {
    expect(internalErrorBody()).toEqual({ error: 'Internal server error', code: 'INTERNAL_ERROR' });
  });
});
