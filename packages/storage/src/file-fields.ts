/**
 * The fields of an upload besides its bytes, as the client sent them (any JSON value), checked into what a file
 * record holds. Every problem found is reported at once, as one 400 VALIDATION_ERROR `field: problem; …`.
 */
import { validationError } from '@wds/errors';
import { checkFilename } from './disposition.js';

// Quoted parameter values are printable ASCII: no controls (NUL included), nothing PostgreSQL text refuses.
const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-z0-9_.-]+=("[\x20\x21\x23-\x7e]*"|[a-z0-9_.+-]+))*$/i;
export const MAX_METADATA_BYTES = 64 * 1024;
export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** The fields as received: unchecked. */
export interface FileFields {
  filename: unknown;
  content_type: unknown;
  metadata: unknown;
}

export interface CheckedFileFields {
  filename: string;
  contentType: string;
  metadata: Record<string, unknown>;
}

/**
 * The caller's rules for text and JSON that must be storable (no NUL, no unpaired surrogate, bounded depth): the
 * same rules every request's input obeys, so an upload's fields fail with the same messages as any other body.
 */
export interface StorableInputRules {
  /** Why a text cannot be stored, or undefined when it can. */
  textProblem(text: string): string | undefined;
  /** Throws a 400 naming `root` (and the path inside it) for a value that cannot be stored. */
  checkJsonValue(value: unknown, root: string): void;
}

/** Checks the fields (content type defaults to application/octet-stream, metadata to `{}`). */
export function checkFileFields(fields: FileFields, rules: StorableInputRules): CheckedFileFields {
  const problems: string[] = [];
  const { filename, content_type, metadata } = fields;
  if (typeof filename !== 'string') problems.push('filename: required, a string');
  else {
    const bad = checkFilename(filename) ?? rules.textProblem(filename);
    if (bad) problems.push(`filename: ${bad}`);
  }
  if (content_type !== undefined && content_type !== null && (typeof content_type !== 'string' || !CONTENT_TYPE.test(content_type))) {
    problems.push('content_type: must be a media type such as application/pdf');
  }
  if (metadata !== undefined && metadata !== null) {
    if (typeof metadata !== 'object' || Array.isArray(metadata)) problems.push('metadata: must be a JSON object');
    else {
      // Storable text and bounded depth first: measuring the size serializes it.
      rules.checkJsonValue(metadata, 'metadata');
      if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) problems.push(`metadata: larger than ${MAX_METADATA_BYTES} bytes`);
    }
  }
  if (problems.length) throw validationError(problems.join('; '));
  return {
    filename: filename as string,
    contentType: typeof content_type === 'string' ? content_type : DEFAULT_CONTENT_TYPE,
    metadata: (metadata as Record<string, unknown> | null | undefined) ?? {},
  };
}
