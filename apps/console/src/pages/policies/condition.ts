/**
 * The condition builder's model and the policy condition JSON (docs/sql-and-policies.md, "Condition language"): an
 * object of fields, AND-ed; each field a value (equality) or an object of operators, also AND-ed. The format has no
 * OR: a row passes a table's policies when it passes any one allow policy, so "or" is a second allow policy.
 */
export type Op = '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte' | '$in' | 'null' | 'notnull';

export const OPS: { op: Op; label: string }[] = [
  { op: '$eq', label: 'equals' },
  { op: '$ne', label: 'does not equal' },
  { op: '$gt', label: 'greater than' },
  { op: '$gte', label: 'at least' },
  { op: '$lt', label: 'less than' },
  { op: '$lte', label: 'at most' },
  { op: '$in', label: 'is one of (comma-separated)' },
  { op: 'null', label: 'is NULL' },
  { op: 'notnull', label: 'is not NULL' },
];

export interface Clause {
  column: string;
  op: Op;
  /** The value as typed ($in: values separated by commas). */
  value: string;
  /** The value is the calling user ($user_id). */
  user: boolean;
}

const NUMERIC = /^(smallint|integer|bigint|numeric|real|double precision|decimal)$/;

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A typed value as JSON: a number or boolean where the column is one, "$user_id" as the variable, else text. */
function jsonValue(text: string, type: string | undefined): Json {
  const t = text.trim();
  if (t === '$user_id') return '$user_id';
  if (type && NUMERIC.test(type) && t !== '' && Number.isFinite(Number(t))) return Number(t);
  if (type === 'boolean' && (t === 'true' || t === 'false')) return t === 'true';
  return text;
}

/** The clauses as the condition JSON (null: no condition, every row). */
export function toCondition(clauses: Clause[], typeOf: (column: string) => string | undefined): Record<string, Json> | null {
  if (clauses.length === 0) return null;
  const out: Record<string, Record<string, Json>> = {};
  for (const c of clauses) {
    if (!c.column) continue;
    const field = out[c.column] ?? {};
    const type = typeOf(c.column);
    if (c.op === 'null' || c.op === 'notnull') field.$null = c.op === 'null';
    else if (c.op === '$in') field.$in = c.value.split(',').map((v) => jsonValue(v.trim(), type));
    else field[c.op] = c.user ? '$user_id' : jsonValue(c.value, type);
    out[c.column] = field;
  }
  return out;
}

const isUser = (v: unknown) => v === '$user_id' || (typeof v === 'object' && v !== null && (v as { $var?: unknown }).$var === 'user_id');
const text = (v: unknown) => (isUser(v) ? '$user_id' : typeof v === 'string' ? v : JSON.stringify(v));

/** The condition JSON as clauses; a string says why it cannot be (then the JSON is still what is saved). */
export function fromCondition(condition: unknown): Clause[] | string {
  if (condition === null || condition === undefined) return [];
  if (typeof condition !== 'object' || Array.isArray(condition)) return 'A condition is a JSON object of columns.';
  const clauses: Clause[] = [];
  for (const [column, v] of Object.entries(condition as Record<string, unknown>)) {
    const plain = v === null || typeof v !== 'object' || Array.isArray(v) || isUser(v);
    if (plain) {
      clauses.push({ column, op: '$eq', value: isUser(v) ? '' : text(v), user: isUser(v) });
      continue;
    }
    for (const [op, arg] of Object.entries(v as Record<string, unknown>)) {
      if (op === '$null') clauses.push({ column, op: arg === false ? 'notnull' : 'null', value: '', user: false });
      else if (op === '$in') {
        if (!Array.isArray(arg)) return `${column}: $in takes a list.`;
        clauses.push({ column, op: '$in', value: arg.map(text).join(', '), user: false });
      } else if (['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'].includes(op)) {
        clauses.push({ column, op: op as Op, value: isUser(arg) ? '' : text(arg), user: isUser(arg) });
      } else return `${column}: unknown operator ${op}.`;
    }
  }
  return clauses;
}
