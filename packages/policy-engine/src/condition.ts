import { validationError } from '@wds/errors';
import type { Condition, Predicate, Value } from './types.js';

const FIELD = /^[a-z_][a-z0-9_]{0,62}$/;
const COMPARISONS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte']);
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function parseValue(v: unknown, path: string): Value {
  if (v === '$user_id') return { $var: 'user_id' };
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw validationError(`${path}: numbers must be finite`);
    return v;
  }
  if (isPlainObject(v) && Object.keys(v).length === 1 && '$var' in v) {
    if (v.$var !== 'user_id') throw validationError(`${path}: the only variable is user_id`);
    return { $var: 'user_id' };
  }
  throw validationError(`${path}: expected a string, number, boolean or "$user_id"`);
}

function parseField(field: string, spec: unknown): Predicate[] {
  const path = `condition.${field}`;
  if (spec === null) return [{ op: '$null', value: true }];
  if (!isPlainObject(spec) || (Object.keys(spec).length === 1 && '$var' in spec)) {
    return [{ op: '$eq', value: parseValue(spec, path) }];
  }
  const ops = Object.entries(spec);
  if (ops.length === 0) throw validationError(`${path}: an empty object is not a condition`);
  return ops.map(([op, v]): Predicate => {
    if (COMPARISONS.has(op)) return { op: op as '$eq', value: parseValue(v, `${path}.${op}`) };
    if (op === '$in') {
      if (!Array.isArray(v)) throw validationError(`${path}.$in: expected an array`);
      return { op: '$in', values: v.map((x, i) => parseValue(x, `${path}.$in[${i}]`)) };
    }
    if (op === '$null') {
      if (typeof v !== 'boolean') throw validationError(`${path}.$null: expected true or false`);
      return { op: '$null', value: v };
    }
    throw validationError(`${path}: unknown operator ${op} (allowed: $eq $ne $gt $gte $lt $lte $in $null)`);
  });
}

/**
 * Validates a condition in the modql form and normalises it: `{ field: value }` → `$eq`, `null` → `$null: true`,
 * `"$user_id"` → `{ $var: 'user_id' }`. An empty object means every row (it is returned as null).
 */
export function parseCondition(input: unknown): Condition | null {
  if (input === null || input === undefined) return null;
  if (!isPlainObject(input)) throw validationError('condition: expected an object of { column: condition }');
  const entries = Object.entries(input);
  if (entries.length === 0) return null;
  const out: Condition = {};
  for (const [field, spec] of entries) {
    if (!FIELD.test(field)) throw validationError(`condition.${field}: columns are lower-case identifiers`);
    // Already-normalised conditions (as stored) parse to themselves.
    if (Array.isArray(spec) && spec.every((p) => isPlainObject(p) && typeof p.op === 'string')) {
      out[field] = spec.flatMap((p) => parseField(field, p.op === '$in' ? { $in: p.values } : { [p.op as string]: p.value }));
    } else {
      out[field] = parseField(field, spec);
    }
  }
  return out;
}

export const conditionColumns = (c: Condition): string[] => Object.keys(c);
