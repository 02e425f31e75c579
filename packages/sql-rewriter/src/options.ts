import type { Constraint, DefElem, Node } from '@pgsql/types';
import { unsupported } from './qualified-names.js';
import type { Path } from './walk.js';

/**
 * Option lists (`WITH (…)`, identity options) are allow-listed per statement, with typed values only. The deparser
 * prints a String option value inside quotes without escaping them (finding 2 of issue 13), so a value such as
 * `'10'' ) ; …'` could close the literal and append commands: String values are accepted only as one of a few
 * fixed words, never as free text.
 */

type ValueSpec =
  | { kind: 'int'; min: number; max: number }
  | { kind: 'bool' }
  | { kind: 'word'; words: ReadonlySet<string> }
  /** A sequence bound: an integer of any size (bigint literals parse as Float); absent for `NO MINVALUE` etc. */
  | { kind: 'seq'; optional: boolean };

const int = (min: number, max: number): ValueSpec => ({ kind: 'int', min, max });
const bool: ValueSpec = { kind: 'bool' };
const BOOL_WORDS: ReadonlySet<string> = new Set(['true', 'false', 'on', 'off']);

/** `CREATE TABLE … WITH (…)`. */
const TABLE_OPTIONS: Record<string, ValueSpec> = { fillfactor: int(10, 100) };
/** `CREATE INDEX … WITH (…)`. */
const INDEX_OPTIONS: Record<string, ValueSpec> = {
  fillfactor: int(10, 100),
  fastupdate: bool,
  deduplicate_items: bool,
  autosummarize: bool,
  pages_per_range: int(1, 131072),
  buffering: { kind: 'word', words: new Set(['on', 'off', 'auto']) },
};
/** `GENERATED … AS IDENTITY (…)`. Not `SEQUENCE NAME` (finding 8: it could squat another workspace's name). */
const IDENTITY_OPTIONS: Record<string, ValueSpec> = {
  start: { kind: 'seq', optional: false },
  increment: { kind: 'seq', optional: false },
  minvalue: { kind: 'seq', optional: true },
  maxvalue: { kind: 'seq', optional: true },
  cache: { kind: 'seq', optional: false },
  restart: { kind: 'seq', optional: true },
  cycle: bool,
};

const REASONS: Record<string, string> = {
  sequence_name: 'SEQUENCE NAME (identity sequences are named after their table and column)',
  owned_by: 'OWNED BY',
};

/** Which option list a DefElem belongs to, or undefined where options are not allowed at all. */
function optionsOf(path: Path): { what: string; allowed: Record<string, ValueSpec> } | undefined {
  const parent = path.parent;
  if (!parent || path.field !== 'options') return undefined;
  switch (parent.tag) {
    case 'CreateStmt':
      return { what: 'table', allowed: TABLE_OPTIONS };
    case 'IndexStmt':
      return { what: 'index', allowed: INDEX_OPTIONS };
    // Index options of PRIMARY KEY / UNIQUE / EXCLUDE are refused by the Constraint rule (the deparser drops them).
    case 'Constraint':
      return (parent.node as Constraint).contype === 'CONSTR_IDENTITY' ? { what: 'identity', allowed: IDENTITY_OPTIONS } : undefined;
    default:
      return undefined;
  }
}

/** The single bare word of a value: `off` parses as a type name, `false` as a String. */
function word(arg: Node | undefined): string | undefined {
  if (!arg) return undefined;
  if ('String' in arg) return arg.String.sval ?? '';
  if ('TypeName' in arg) {
    const t = arg.TypeName;
    const names = t.names ?? [];
    if (names.length === 1 && !t.typmods?.length && !t.arrayBounds?.length && !t.pct_type && !t.setof) {
      const n = names[0] as Node;
      if ('String' in n) return n.String.sval ?? '';
    }
  }
  return undefined;
}

function valueOk(spec: ValueSpec, arg: Node | undefined): boolean {
  switch (spec.kind) {
    case 'int': {
      if (!arg || !('Integer' in arg)) return false;
      const v = arg.Integer.ival ?? 0;
      return v >= spec.min && v <= spec.max;
    }
    case 'bool': {
      if (!arg) return true; // `WITH (fastupdate)` means true
      if ('Boolean' in arg) return true;
      if ('Integer' in arg) return (arg.Integer.ival ?? 0) === 0 || arg.Integer.ival === 1;
      const w = word(arg);
      return w !== undefined && BOOL_WORDS.has(w);
    }
    case 'word': {
      const w = word(arg);
      return w !== undefined && spec.words.has(w);
    }
    case 'seq':
      if (!arg) return spec.optional;
      if ('Integer' in arg) return true;
      return 'Float' in arg && /^[+-]?[0-9]{1,20}$/.test(arg.Float.fval ?? '');
  }
}

/** The rule of a DefElem node: only listed options, only with typed values. */
export function checkOption(path: Path): void {
  const d = path.node as DefElem;
  const name = d.defname ?? '';
  const context = optionsOf(path);
  if (!context) throw unsupported(`options here (${path.parent?.tag ?? 'statement'} ${path.field})`);
  if (REASONS[name]) throw unsupported(REASONS[name]);
  if (d.defnamespace !== undefined) throw unsupported(`option ${d.defnamespace}.${name}`);
  if (d.defaction !== undefined && d.defaction !== 'DEFELEM_UNSPEC') throw unsupported(`option action ${d.defaction}`);
  const spec = context.allowed[name];
  if (!spec) throw unsupported(`${context.what} option ${name}`, `allowed: ${Object.keys(context.allowed).join(', ')}`);
  if (!valueOk(spec, d.arg)) {
    const expected = spec.kind === 'int' ? `an integer from ${spec.min} to ${spec.max}` : spec.kind === 'seq' ? 'an integer' : spec.kind === 'bool' ? 'true or false' : [...spec.words].join(', ');
    throw unsupported(`${context.what} option ${name}: the value must be ${expected}`);
  }
}
