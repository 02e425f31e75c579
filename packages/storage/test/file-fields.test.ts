import { ServiceError } from '@wds/errors';
import { describe, expect, it } from 'vitest';
import { MAX_METADATA_BYTES, type StorableInputRules, checkFileFields } from '../src/index.js';

/** Stand-ins for the caller's rules: NUL is not storable; `bad` anywhere in metadata is refused. */
const rules: StorableInputRules = {
  textProblem: (s) => (s.includes('\u0000') ? 'must not contain NUL' : undefined),
  checkJsonValue: (value, root) => {
    if (JSON.stringify(value).includes('bad')) throw new ServiceError('VALIDATION_ERROR', 'Invalid request', `${root}: not storable`);
  },
};

const refusal = (fields: Parameters<typeof checkFileFields>[0]): string | undefined => {
  try {
    checkFileFields(fields, rules);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ServiceError);
    expect((err as ServiceError).code).toBe('VALIDATION_ERROR');
    return (err as ServiceError).details;
  }
};

describe('checkFileFields', () => {
  it('defaults the content type and metadata', () => {
    expect(checkFileFields({ filename: 'a.txt', content_type: undefined, metadata: null }, rules)).toEqual({
      filename: 'a.txt',
      contentType: 'application/octet-stream',
      metadata: {},
    });
  });

  it('keeps a valid content type with parameters and metadata', () => {
    const f = { filename: 'r.csv', content_type: 'text/csv; charset="utf-8"', metadata: { tag: 'q1' } };
    expect(checkFileFields(f, rules)).toEqual({ filename: 'r.csv', contentType: 'text/csv; charset="utf-8"', metadata: { tag: 'q1' } });
  });

  it('refuses a missing or bad filename: the name rules first, then the storable-text rule', () => {
    expect(refusal({ filename: undefined, content_type: undefined, metadata: undefined })).toBe('filename: required, a string');
    expect(refusal({ filename: 7, content_type: undefined, metadata: undefined })).toBe('filename: required, a string');
    expect(refusal({ filename: '', content_type: undefined, metadata: undefined })).toBe('filename: must not be empty');
    expect(refusal({ filename: 'a/b', content_type: undefined, metadata: undefined })).toBe('filename: must not contain path separators (/ or \\)');
    // NUL is a control character: checkFilename names it before the text rule would.
    expect(refusal({ filename: 'a\u0000', content_type: undefined, metadata: undefined })).toBe('filename: must not contain control characters');
  });

  it.each(['text', 'text/', '/plain', 'text/plain; charset="a\u0001"', 'text/plain;', 42, { type: 'text/plain' }])(
    'refuses the content type %j',
    (content_type) => {
      expect(refusal({ filename: 'a', content_type, metadata: undefined })).toBe('content_type: must be a media type such as application/pdf');
    },
  );

  it('refuses metadata that is not an object, not storable, or too large', () => {
    expect(refusal({ filename: 'a', content_type: null, metadata: [1] })).toBe('metadata: must be a JSON object');
    expect(refusal({ filename: 'a', content_type: null, metadata: 'x' })).toBe('metadata: must be a JSON object');
    expect(refusal({ filename: 'a', content_type: null, metadata: { v: 'bad' } })).toBe('metadata: not storable');
    expect(refusal({ filename: 'a', content_type: null, metadata: { v: 'x'.repeat(MAX_METADATA_BYTES) } })).toBe(
      `metadata: larger than ${MAX_METADATA_BYTES} bytes`,
    );
  });

  it('reports every problem at once, in field order', () => {
    expect(refusal({ filename: '..', content_type: 'nope', metadata: [] })).toBe(
      'filename: must not be . or ..; content_type: must be a media type such as application/pdf; metadata: must be a JSON object',
    );
  });
});
