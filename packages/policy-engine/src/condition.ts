import { validationError } from '@wds/errors';
import type { CompareOperator, Condition, ConditionValue, FieldCondition } from './types.js';

const COLUMN = /^[a-z_][a-z0-9_]*$/;
const MAX_COLUMN = 63;
/** Values of one `$in` list. */
export const MAX_IN_ITEMS = 100;
/** Characters of one string value in a condition. */
export const MAX_VALUE_CHARS = 1000;
const COMPARE: readonly CompareOperator[] = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'];
const OPERATORS = [...COMPARE, '$in', '$null'] as const;
const OPERATOR_LIST = OPERATORS.join(', ');
// A string that looks like a placeholder but is not `$user_id` is almost surely a typo; taken literally it would
// silently weaken a deny.
const PLACEHOLDER = /^\$[A-Za-z_][A-Za-z0-9_]*$/;

const fail = (path: string, reason: string) => validationError(`${path}: ${reason}`, 'Invalid policy condition');

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' &&
  v !== null &&
  (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

const isVar = (v: Record<string, unknown>): boolean => Object.hasOwn(v, '$var');

const key = (path: string, k: string) => (COLUMN.test(k) || k.startsWith('$') ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`);

function parseValue(v: unknown, path: string): ConditionValue {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw fail(path, 'numbers must be finite');
    return v;
  }
  if (typeof v === 'string') {
    if (v === '$user_id') return { $var: 'user_id' };
    if (PLACEHOLDER.test(v)) throw fail(path, `unknown placeholder ${JSON.stringify(v)} (the only one is "$user_id")`);
    if (v.length > MAX_VALUE_CHARS) throw fail(path, `at most ${MAX_VALUE_CHARS} characters`);
    return v;
  }
  if (v === null) throw fail(path, 'null is not a value here (use {"$null": true})');
  if (isPlainObject(v) && isVar(v)) {
    if (Object.keys(v).length !== 1) throw fail(path, '$var cannot be combined with other keys');
    if (v.$var !== 'user_id') throw fail(`${path}.$var`, `unknown variable ${JSON.stringify(v.$var)} (the only one is "user_id")`);
    return { $var: 'user_id' };
  }
  throw fail(path, 'expected a string, number, boolean, "$user_id" or {"$var": "user_id"}');
}

function parseField(v: unknown, path: string): FieldCondition {
  if (v === null) return { $null: true };
  if (!isPlainObject(v) || isVar(v)) return { $eq: parseValue(v, path) };
  const keys = Object.keys(v);
  if (keys.length === 0) throw fail(path, `empty object; give a value or operators (${OPERATOR_LIST})`);
  for (const k of keys) {
    if (!(OPERATORS as readonly string[]).includes(k)) {
      throw fail(key(path, k), k.startsWith('$') ? `unknown operator (allowed: ${OPERATOR_LIST})` : `expected an operator (${OPERATOR_LIST})`);
    }
  }
  // Fixed operator order, so equal conditions normalise (and compile) identically.
  const out: FieldCondition = {};
  for (const op of COMPARE) if (op in v) out[op] = parseValue(v[op], `${path}.${op}`);
  if ('$in' in v) {
    const list = v.$in;
    if (!Array.isArray(list)) throw fail(`${path}.$in`, 'expected an array of strings, numbers or booleans');
    // The filter is injected into every reference to the table: a huge list would make every statement huge.
    if (list.length > MAX_IN_ITEMS) throw fail(`${path}.$in`, `at most ${MAX_IN_ITEMS} values`);
    out.$in = list.map((x, i) => parseValue(x, `${path}.$in[${i}]`));
  }
  if ('$null' in v) {
    if (typeof v.$null !== 'boolean') throw fail(`${path}.$null`, 'expected true (IS NULL) or false (IS NOT NULL)');
    out.$null = v.$null;
  }
  return out;
}

/**
 * Validates a modql condition and returns its normal form: every field an object of operators in a fixed order,
 * `value` → `{$eq: value}`, `null` → `{$null: true}`, `"$user_id"` → `{$var: "user_id"}`. The normal form parses
 * to itself. `{}` is valid and means TRUE (every row), like no condition at all.
 * Throws VALIDATION_ERROR whose details name the path and the reason.
 */
export function parseCondition(input: unknown): Condition {
  if (!isPlainObject(input)) throw fail('condition', 'expected an object of {"column": condition}');
  // fromEntries, not assignment: a column named __proto__ must stay a plain own property.
  return Object.fromEntries(
    Object.keys(input).map((column) => {
      const path = key('condition', column);
      if (column.startsWith('$')) throw fail(path, 'operators belong under a column; the top level takes column names (ANDed)');
      if (!COLUMN.test(column)) throw fail(path, 'a column name is a lower-case identifier matching ^[a-z_][a-z0-9_]*$');
      if (column.length > MAX_COLUMN) throw fail(path, `a column name has at most ${MAX_COLUMN} characters`);
      return [column, parseField(input[column], path)];
    }),
  );
}

const VALUE_SCHEMA = {
  anyOf: [
    { type: 'string', maxLength: MAX_VALUE_CHARS, description: '"$user_id" stands for the caller' },
    { type: 'number' },
    { type: 'boolean' },
    { type: 'object', required: ['$var'], properties: { $var: { const: 'user_id' } }, additionalProperties: false },
  ],
};
const OPERATORS_SCHEMA = {
  type: 'object',
  minProperties: 1,
  properties: {
    ...Object.fromEntries(COMPARE.map((op) => [op, VALUE_SCHEMA])),
    $in: { type: 'array', maxItems: MAX_IN_ITEMS, items: VALUE_SCHEMA },
    $null: { type: 'boolean', description: 'true: IS NULL; false: IS NOT NULL' },
  },
  additionalProperties: false,
};

/**
 * What parseCondition accepts, as JSON Schema (for the OpenAPI document): `{"column": value | null | {operators}}`,
 * the columns ANDed; `{}` means every row.
 */
export const CONDITION_JSON_SCHEMA = {
  type: 'object',
  description: `A modql condition: {"column": condition}, ANDed. A condition is a value (equality), null (IS NULL), or operators (${OPERATOR_LIST}); "$user_id" or {"$var": "user_id"} stands for the caller. {} matches every row.`,
  propertyNames: { pattern: COLUMN.source, maxLength: MAX_COLUMN },
  additionalProperties: { anyOf: [VALUE_SCHEMA, { type: 'null' }, OPERATORS_SCHEMA] },
};

/** The columns a condition references, in order. */
export const conditionColumns = (c: Condition): string[] => Object.keys(c);
