/**
 * Drive sync settings of a workspace (platform.drive_sync_configs.settings). Small on purpose:
 *
 * | key                     | type    | default | meaning                                                        |
 * |-------------------------|---------|---------|----------------------------------------------------------------|
 * | `include_shared_drives` | boolean | false   | the folder picker also lists shared drives                     |
 * | `max_file_bytes`        | integer | 100 MB  | largest file materialize imports (1 byte … 100 MB)             |
 *
 * putConfig replaces the whole object; keys left out take their defaults, unknown keys are refused.
 */
import { validationError } from '@wds/errors';
import { DOWNLOAD_MAX_BYTES } from '@wds/providers';

export interface DriveSyncSettings {
  include_shared_drives: boolean;
  max_file_bytes: number;
}

export const DEFAULT_SETTINGS: Readonly<DriveSyncSettings> = { include_shared_drives: false, max_file_bytes: DOWNLOAD_MAX_BYTES };
const KEYS = Object.keys(DEFAULT_SETTINGS);

/** Validates settings from a request: VALIDATION_ERROR listing every problem. */
export function checkSettings(input: unknown): DriveSyncSettings {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw validationError('settings: must be a JSON object');
  const given = input as Record<string, unknown>;
  const problems: string[] = [];
  const unknown = Object.keys(given).filter((k) => !KEYS.includes(k));
  if (unknown.length > 0) problems.push(`settings: unknown key ${unknown.join(', ')} (known: ${KEYS.join(', ')})`);
  const { include_shared_drives, max_file_bytes } = given;
  if (include_shared_drives !== undefined && typeof include_shared_drives !== 'boolean') problems.push('include_shared_drives: must be true or false');
  if (max_file_bytes !== undefined && !(Number.isSafeInteger(max_file_bytes) && (max_file_bytes as number) >= 1 && (max_file_bytes as number) <= DOWNLOAD_MAX_BYTES)) {
    problems.push(`max_file_bytes: an integer from 1 to ${DOWNLOAD_MAX_BYTES}`);
  }
  if (problems.length > 0) throw validationError(problems.join('; '));
  return {
    include_shared_drives: (include_shared_drives as boolean | undefined) ?? DEFAULT_SETTINGS.include_shared_drives,
    max_file_bytes: (max_file_bytes as number | undefined) ?? DEFAULT_SETTINGS.max_file_bytes,
  };
}

/** Stored settings with defaults for anything missing (what older rows or hand edits lack). */
export function storedSettings(stored: unknown): DriveSyncSettings {
  const s = (typeof stored === 'object' && stored !== null ? stored : {}) as Partial<DriveSyncSettings>;
  return {
    include_shared_drives: typeof s.include_shared_drives === 'boolean' ? s.include_shared_drives : DEFAULT_SETTINGS.include_shared_drives,
    max_file_bytes: Number.isSafeInteger(s.max_file_bytes) ? (s.max_file_bytes as number) : DEFAULT_SETTINGS.max_file_bytes,
  };
}
