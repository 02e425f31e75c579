/**
 * Rewrite templates: what a statement *shape* rewrites to, so that a statement seen before with other constants
 * skips analysis, rewriting, printing and the round-trip parse.
 *
 * The shape of a parsed statement is its tree with the values of its literal constants left out (strings,
 * integers and decimals the user typed; every other node, name and flag stays in the key). The rules never look
 * at those values (rules.ts: `A_Const` passes), so the analysis of one statement of a shape holds for all of them,
 * and the rewrite puts each user constant where it was, as it was.
 *
 * A template is the rewritten tree with each user constant replaced by a parameter (`$k`), printed and parsed
 * again: it must read back as the same tree, and the parameters' positions in the text are where the constants go.
 * A template is kept only when two more checks pass, once, when it is made:
 * - filled with this statement's own constants it parses to exactly the tree the full rewrite produced;
 * - a probe, the same statement with every constant replaced by a different value of the same kind, analysed and
 *   rewritten the full way, gives the template's tree with those values (the output follows the constants and
 *   depends on nothing else about them: no constant is copied, dropped or read by value).
 * Filling writes each constant as one literal token of our own making (a standard string with doubled quotes, a
 * number checked against a strict pattern, negative numbers in parentheses), with a space on each side unless the
 * neighbour is whitespace or a one-character token, so it cannot merge with its neighbours or change the
 * statement's structure: the text sent is the verified template
 * with a constant of the same kind in each parameter's place.
 */
import { createHash } from 'node:crypto';
import { deparseSync } from 'pgsql-deparser';
import { type Analysis, analyzeParsed } from './analyze.js';
import { replaceWrapper, wrappers } from './ast.js';
import { type AnyNode, MAX_DERIVED_SQL_BYTES, type ParsedStatement, parseSqlTree } from './parse.js';
import { type RewriteOptions, rewriteTree } from './rewrite.js';
import { POSITION_FIELDS, firstDifference } from './verify.js';
import { MAX_DEPTH } from './walk.js';

/**
 * The type PostgreSQL gives the literal: `s` a string (unknown until its context decides), `i` an integer (int4),
 * `l` an integer too large for int4 (int8), `f` a decimal (numeric); `-` marks a negative number (printed in
 * parentheses, so its own shape).
 */
export type ConstantKind = 's' | 'i' | 'i-' | 'l' | 'l-' | 'f' | 'f-';

/** The parameter type of each kind when a template runs as a prepared statement (0: PostgreSQL infers it). */
export const PARAMETER_TYPES: Readonly<Record<ConstantKind, number>> = { s: 0, i: 23, 'i-': 23, l: 20, 'l-': 20, f: 1700, 'f-': 1700 };

export interface Constant {
  kind: ConstantKind;
  /** The constant as one literal token, as it is written into a template. */
  text: string;
  /** The constant as a parameter value (text format). */
  value: string;
}

export interface Shape {
  /** The tree without positions and without the values of `constants` (their kinds stay). */
  key: string;
  /** The user's constants, in tree order: parameter k of a template is constants[k - 1]. */
  constants: Constant[];
  /** Where each constant is in the statement's text (UTF-8 byte offsets, as the tree has them). */
  locations: number[];
}

export interface Template {
  /** The template's text around its parameters, spaced so that a constant never touches a token: segments.length === slots.length + 1. */
  segments: string[];
  /** For each gap between segments, the index of the constant that goes there. */
  slots: number[];
  /** The printed template itself, with `$k` for constant k - 1: what runs as a prepared statement. */
  text: string;
  /** A name for the prepared statement of `text` and `parameterTypes` (the same pair always has the same name). */
  name: string;
  /** The parameter type of each constant. */
  parameterTypes: number[];
}

/** Statements longer than this are not shaped (their key would be large, and long statements rarely repeat). */
export const MAX_SHAPED_SQL_CHARS = 8 * 1024;

/** A decimal as PostgreSQL's scanner reads one (what `Float.fval` holds for the constants we take). */
const DECIMAL = /^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/** Characters next to which a literal token needs no space: whitespace and punctuation that is a token by itself. */
const SEPARATED = /^[\s(),[\];]$/;

const quote = (s: string): string => `'${s.replaceAll("'", "''")}'`;
const INT8_MAX = 9_223_372_036_854_775_807n;
const INT8_MIN = -9_223_372_036_854_775_808n;
const INT4_MAX = 2_147_483_647n;
const INT4_MIN = -2_147_483_648n;

/**
 * The kind of a `Float` constant as PostgreSQL types the literal (make_const): an integer that fits int4 is int4
 * (`-2147483648` arrives here, negated after scanning), one that fits int8 is int8, anything else numeric.
 */
function decimalKind(v: string): ConstantKind {
  const negative = v.startsWith('-');
  if (/^-?[0-9]+$/.test(v)) {
    const n = BigInt(v);
    if (n >= INT4_MIN && n <= INT4_MAX) return negative ? 'i-' : 'i';
    if (n >= INT8_MIN && n <= INT8_MAX) return negative ? 'l-' : 'l';
  }
  return negative ? 'f-' : 'f';
}

/**
 * The constant of an `A_Const` node, when it is one the user typed as a string or number literal (the source text
 * at its position starts like one: grammar-made constants, such as the `day` of `interval '1' day`, are at a
 * keyword). Undefined when it is not taken (its value then stays in the key).
 */
function constantOf(c: AnyNode, at: (i: number) => number): Constant | undefined {
  const loc = c.location;
  if (typeof loc !== 'number' || loc < 0) return undefined;
  const b = at(loc);
  if (c.sval !== undefined) {
    // 'x', E'x' / e'x', $$x$$ / $tag$x$tag$
    const starts = b === 0x27 || b === 0x24 || ((b === 0x45 || b === 0x65) && at(loc + 1) === 0x27);
    const value: string = c.sval.sval ?? '';
    return starts ? { kind: 's', text: quote(value), value } : undefined;
  }
  const numeric = (b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x2e;
  if (!numeric) return undefined;
  if (c.ival !== undefined) {
    const v = c.ival.ival ?? 0;
    if (!Number.isSafeInteger(v)) return undefined;
    return v < 0 ? { kind: 'i-', text: `(${v})`, value: String(v) } : { kind: 'i', text: String(v), value: String(v) };
  }
  if (c.fval !== undefined) {
    const v = c.fval.fval;
    if (typeof v !== 'string' || !DECIMAL.test(v)) return undefined;
    const kind = decimalKind(v);
    return { kind, text: kind.endsWith('-') ? `(${v})` : v, value: v };
  }
  return undefined;
}

/**
 * The shape of a parsed statement (see the top of this file), or undefined when it is not worth a template (too
 * long, or nested deeper than the analysis allows: the full path then refuses it).
 */
export function shapeOf(parsed: ParsedStatement, sql: string): Shape | undefined {
  if (sql.length > MAX_SHAPED_SQL_CHARS) return undefined;
  // Positions are UTF-8 byte offsets.
  const ascii = Buffer.byteLength(sql) === sql.length;
  const bytes = ascii ? undefined : Buffer.from(sql, 'utf8');
  const at = bytes ? (i: number) => bytes[i] ?? -1 : (i: number) => (i < sql.length ? sql.charCodeAt(i) : -1);
  const constants: Constant[] = [];
  const locations: number[] = [];
  const parts: string[] = [];
  // `literal`: inside ORDER BY, GROUP BY or DISTINCT ON, where an integer names an output column by position (a
  // parameter there would be a value to sort by): constants there stay in the key.
  const emit = (v: unknown, depth: number, literal: boolean): boolean => {
    if (depth > MAX_DEPTH * 4) return false;
    if (v === null || typeof v !== 'object') {
      parts.push(typeof v === 'string' ? JSON.stringify(v) : String(v));
      return true;
    }
    if (Array.isArray(v)) {
      parts.push('[');
      for (const item of v) {
        if (!emit(item, depth + 1, literal)) return false;
        parts.push(',');
      }
      parts.push(']');
      return true;
    }
    const o = v as Record<string, AnyNode>;
    const c = o.A_Const;
    if (c !== undefined && !literal) {
      const constant = constantOf(c, at);
      if (constant) {
        constants.push(constant);
        locations.push(c.location);
        parts.push(`{?${constant.kind}}`);
        return true;
      }
    }
    // A string cast to a type with modifiers (`interval '1' day`): PostgreSQL reads the literal with the modifier,
    // a parameter without it (as a parameter, '1' would be one second), so the value stays in the key.
    const cast = o.TypeCast as AnyNode;
    const modified = cast !== undefined && (cast.typeName?.typmods?.length ?? 0) > 0;
    parts.push('{');
    for (const k in o) {
      if (POSITION_FIELDS.has(k)) continue;
      parts.push(k, ':');
      if (!emit(o[k], depth + 1, literal || POSITIONAL.has(k) || modified)) return false;
      parts.push(';');
    }
    parts.push('}');
    return true;
  };
  if (!emit(parsed.stmt, 0, false)) return undefined;
  return { key: parts.join(''), constants, locations };
}

/** Clauses where PostgreSQL reads an integer constant as an output column's position. */
const POSITIONAL = new Set(['SortBy', 'groupClause', 'distinctClause']);

/** The statement text of `template` with `constants` in its parameters' places. */
export function fillTemplate(template: Template, constants: readonly Constant[]): string {
  const { segments, slots } = template;
  let out = segments[0] as string;
  for (let i = 0; i < slots.length; i++) out += (constants[slots[i] as number] as Constant).text + segments[i + 1];
  return out;
}

/** Calls `visit` with every `{ Tag: node }` wrapper of `tree` (all found first, so `visit` may replace them). */
function eachWrapper(tree: AnyNode, visit: (wrapper: Record<string, AnyNode>) => void): void {
  for (const wrapper of wrappers(tree).values()) visit(wrapper as Record<string, AnyNode>);
}

/** The kind of an A_Const as `constantOf` would take it, whatever its position. */
function kindOf(c: AnyNode): ConstantKind | undefined {
  if (c.sval !== undefined) return 's';
  if (c.ival !== undefined) return (c.ival.ival ?? 0) < 0 ? 'i-' : 'i';
  if (c.fval !== undefined) return decimalKind(String(c.fval.fval));
  return undefined;
}

/** A value of each kind that no statement is likely to hold, different for each constant. */
function probeConstant(kind: ConstantKind, k: number): AnyNode {
  switch (kind) {
    case 's':
      return { sval: { sval: `wds probe ${k} '\\` } };
    case 'i':
      return { ival: { ival: 1_000_003 + 7 * k } };
    case 'i-':
      return { ival: { ival: -(1_000_003 + 7 * k) } };
    case 'l':
      return { fval: { fval: `${9_000_000_000 + k}` } };
    case 'l-':
      return { fval: { fval: `-${9_000_000_000 + k}` } };
    case 'f':
      return { fval: { fval: `${987_654 + k}.25` } };
    case 'f-':
      return { fval: { fval: `-${987_654 + k}.25` } };
  }
}

const summaryOf = (a: Analysis) => JSON.stringify([a.kind, a.writes, a.returning, a.tables, a.access]);

/**
 * Makes the template of an analysed statement whose full rewrite (`rewritten`, from `rewriteTree(analysis,
 * options)`) is known, or undefined when any check fails (the statement then always takes the full path).
 */
export function buildTemplate(analysis: Analysis, options: RewriteOptions, rewritten: AnyNode, shape: Shape): Template | undefined {
  try {
    return buildTemplateUnguarded(analysis, options, rewritten, shape);
  } catch {
    // Anything unexpected (a deparser gap, a parse error of the printed template): no template, never an error.
    return undefined;
  }
}

function buildTemplateUnguarded(analysis: Analysis, options: RewriteOptions, rewritten: AnyNode, shape: Shape): Template | undefined {
  // Where each user constant was, by position in the user's text (a copy the rewriter made keeps its position).
  const byLocation = new Map<number, number>();
  for (const [k, location] of shape.locations.entries()) {
    if (byLocation.has(location)) return undefined;
    byLocation.set(location, k);
  }

  // 1. The rewritten tree with each user constant as parameter $k.
  const paramTree = structuredClone(rewritten);
  eachWrapper(paramTree, (w) => {
    const c = w.A_Const;
    if (c === undefined || typeof c.location !== 'number') return;
    const k = byLocation.get(c.location);
    if (k === undefined) return;
    if (kindOf(c) !== shape.constants[k]?.kind) throw new Error('constant changed kind');
    replaceWrapper(w as never, { ParamRef: { number: k + 1, location: c.location } } as never);
  });

  // 2. Printed, it must parse back as the same tree; the parameters' positions split the text.
  const text = deparseSync(paramTree, { pretty: false });
  const back = parseSqlTree(text, { maxBytes: MAX_DERIVED_SQL_BYTES });
  if (back?.stmts?.length !== 1 || firstDifference(paramTree.stmts[0].stmt, back.stmts[0].stmt)) return undefined;
  const params: { number: number; location: number }[] = [];
  eachWrapper(back, (w) => {
    if (w.ParamRef) params.push({ number: w.ParamRef.number, location: w.ParamRef.location });
  });
  params.sort((a, b) => a.location - b.location);
  const textBytes = Buffer.from(text, 'utf8');
  const segments: string[] = [];
  const slots: number[] = [];
  let from = 0;
  for (const p of params) {
    const token = `$${p.number}`;
    if (p.number < 1 || p.number > shape.constants.length || p.location < from) return undefined;
    if (textBytes.subarray(p.location, p.location + token.length).toString('latin1') !== token) return undefined;
    segments.push(textBytes.subarray(from, p.location).toString('utf8'));
    slots.push(p.number - 1);
    from = p.location + token.length;
  }
  segments.push(textBytes.subarray(from).toString('utf8'));
  // A space on each side of a constant unless its neighbour is a space or punctuation no token can merge with.
  for (let i = 0; i < slots.length; i++) {
    if (!SEPARATED.test((segments[i] as string).at(-1) ?? ' ')) segments[i] += ' ';
    if (!SEPARATED.test((segments[i + 1] as string)[0] ?? ' ')) segments[i + 1] = ` ${segments[i + 1]}`;
  }
  const parameterTypes = shape.constants.map((c) => PARAMETER_TYPES[c.kind]);
  const template: Template = {
    segments,
    slots,
    text,
    // The text alone does not say how its parameters are typed (`x / $1` with an int4 or a numeric $1).
    name: `wds_t_${createHash('sha1').update(`${parameterTypes.join(',')}\u0000${text}`).digest('hex')}`,
    parameterTypes,
  };

  // 3. Filled with this statement's constants, it must be exactly the full rewrite.
  const filled = parseSqlTree(fillTemplate(template, shape.constants), { maxBytes: MAX_DERIVED_SQL_BYTES });
  if (filled?.stmts?.length !== 1 || firstDifference(rewritten.stmts[0].stmt, filled.stmts[0].stmt)) return undefined;

  // 4. The probe: other values of the same kinds, the full way, must give the template with those values.
  const probeTree = structuredClone(analysis.parsed.tree);
  eachWrapper(probeTree, (w) => {
    const c = w.A_Const;
    if (c === undefined || typeof c.location !== 'number') return;
    const k = byLocation.get(c.location);
    if (k === undefined) return;
    replaceWrapper(w as never, { A_Const: { ...probeConstant(shape.constants[k]?.kind as ConstantKind, k), location: c.location } } as never);
  });
  const probeStmt = probeTree.stmts[0].stmt;
  const probe = analyzeParsed({ tree: probeTree, stmt: probeStmt, tag: analysis.parsed.tag });
  if (summaryOf(probe) !== summaryOf(analysis)) return undefined;
  const probeRewritten = rewriteTree(probe, options);
  const expected = structuredClone(paramTree);
  eachWrapper(expected, (w) => {
    const p = w.ParamRef;
    if (p === undefined) return;
    replaceWrapper(w as never, { A_Const: probeConstant(shape.constants[p.number - 1]?.kind as ConstantKind, p.number - 1) } as never);
  });
  if (firstDifference(expected.stmts[0].stmt, probeRewritten.stmts[0].stmt)) return undefined;
  return template;
}

/**
 * A lexical shape: the statement's text with the contents of its plain string and number literals left out, for
 * finding the template of a statement seen before without parsing it. Deliberately narrow: anything but ASCII
 * identifiers, keywords, operators, punctuation, double-quoted identifiers, standard '…' strings and short decimal
 * numbers (comments, dollar quotes, prefixed strings such as E'…' or U&'…', exponents, `$`, backslashes, strings
 * continued on the next line, integers of 10 digits or more) gives none, and the statement is parsed. Two
 * statements with the same key are the same text but inside those literals; which literals a template takes as
 * parameters, and how, is learnt from a parse of one of them (`learnLexical`).
 */
export interface LexicalShape {
  key: string;
  /** The literals in text order: a string's value (quotes undone) or a number's digits. */
  literals: { string: boolean; value: string; start: number; end: number }[];
}

const isIdent = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || (c >= 0x30 && c <= 0x39);
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const OPERATOR = new Set('+-*/<>=~!@#%^&|`?'.split('').map((c) => c.charCodeAt(0)));
const PUNCTUATION = new Set('(),;[].:'.split('').map((c) => c.charCodeAt(0)));
const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

export function lexicalShape(sql: string): LexicalShape | undefined {
  if (sql.length > MAX_SHAPED_SQL_CHARS) return undefined;
  const literals: LexicalShape['literals'] = [];
  let key = '';
  let from = 0;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (SPACE.has(c)) {
      i++;
    } else if (c === 0x27) {
      // '…' with '' for a quote; the character before must not make it a prefixed string (E'…', B'…', U&'…').
      if (i > 0 && (isIdent(sql.charCodeAt(i - 1)) || sql.charCodeAt(i - 1) === 0x26)) return undefined;
      let j = i + 1;
      let value = '';
      for (;;) {
        const q = sql.indexOf("'", j);
        if (q < 0) return undefined;
        value += sql.slice(j, q);
        if (sql.charCodeAt(q + 1) === 0x27) {
          value += "'";
          j = q + 2;
          continue;
        }
        j = q + 1;
        break;
      }
      // A string followed (past whitespace) by another is one literal in PostgreSQL when a newline separates them.
      let k = j;
      while (k < n && SPACE.has(sql.charCodeAt(k))) k++;
      if (sql.charCodeAt(k) === 0x27) return undefined;
      key += `${sql.slice(from, i)}\u0001s`;
      literals.push({ string: true, value, start: i, end: j });
      from = j;
      i = j;
    } else if (isDigit(c) || (c === 0x2e && isDigit(sql.charCodeAt(i + 1)))) {
      if (i > 0 && (isIdent(sql.charCodeAt(i - 1)) || sql.charCodeAt(i - 1) === 0x2e)) return undefined;
      let j = i;
      while (j < n && isDigit(sql.charCodeAt(j))) j++;
      let decimal = false;
      if (sql.charCodeAt(j) === 0x2e && !(sql.charCodeAt(j + 1) === 0x2e)) {
        decimal = true;
        j++;
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
      }
      const next = sql.charCodeAt(j);
      if (j < n && (isIdent(next) || next === 0x2e || next === 0x24)) return undefined;
      const value = sql.slice(i, j);
      if (!decimal && value.length >= 10) return undefined;
      key += `${sql.slice(from, i)}\u0001${decimal ? 'f' : 'i'}`;
      literals.push({ string: false, value, start: i, end: j });
      from = j;
      i = j;
    } else if (c === 0x22) {
      const q = sql.indexOf('"', i + 1);
      if (q < 0) return undefined;
      // "" inside a quoted name: the scan goes on past it.
      i = q + 1;
      while (sql.charCodeAt(i) === 0x22) {
        const r = sql.indexOf('"', i + 1);
        if (r < 0) return undefined;
        i = r + 1;
      }
    } else if (isIdent(c)) {
      while (i < n && isIdent(sql.charCodeAt(i))) i++;
      if (sql.charCodeAt(i) === 0x24) return undefined;
    } else if (OPERATOR.has(c)) {
      if ((c === 0x2d && sql.charCodeAt(i + 1) === 0x2d) || (c === 0x2f && sql.charCodeAt(i + 1) === 0x2a)) return undefined;
      i++;
    } else if (PUNCTUATION.has(c)) {
      i++;
    } else {
      return undefined;
    }
  }
  key += sql.slice(from);
  return { key, literals };
}

/** How to get a shape's constants from a lexical shape's literals, learnt from one parsed statement. */
export interface LexicalMap {
  /** For each constant of the shape (tree order): its literal, and whether a minus before it belongs to it. */
  constants: { literal: number; negative: boolean; kind: ConstantKind }[];
  /** Literals that are not constants of the shape (their values are part of it): index → value. */
  fixed: [number, string][];
}

/**
 * Pairs a parsed statement's shape with its lexical shape: each constant of the shape is a literal of the text
 * (its position is the literal's, or a minus sign just before it that the grammar folded into the constant).
 * Undefined when they do not pair up exactly.
 */
export function learnLexical(shape: Shape, lexical: LexicalShape, sql: string): LexicalMap | undefined {
  // Tree positions are UTF-8 byte offsets; the lexical scan's are string indexes.
  const bytes = Buffer.from(sql, 'utf8');
  const starts = new Map<number, number>();
  lexical.literals.forEach((l, index) => {
    starts.set(Buffer.byteLength(sql.slice(0, l.start)), index);
  });
  const used = new Set<number>();
  const constants: LexicalMap['constants'] = [];
  for (const [k, location] of shape.locations.entries()) {
    const c = shape.constants[k] as Constant;
    let index = starts.get(location);
    let negative = false;
    if (index === undefined && bytes[location] === 0x2d) {
      // `- 5`, `-5`: the literal is the next token after the minus.
      let j = location + 1;
      while (j < bytes.length && SPACE.has(bytes[j] as number)) j++;
      index = starts.get(j);
      negative = true;
    }
    const literal = index === undefined ? undefined : lexical.literals[index];
    if (index === undefined || !literal || used.has(index)) return undefined;
    if (literal.string !== (c.kind === 's')) return undefined;
    if (!literal.string && c.kind.endsWith('-') !== negative) return undefined;
    used.add(index);
    constants.push({ literal: index, negative, kind: c.kind });
  }
  const fixed: [number, string][] = [];
  lexical.literals.forEach((l, index) => {
    if (!used.has(index)) fixed.push([index, l.value]);
  });
  return { constants, fixed };
}

/** The shape's constants from a statement with the same lexical shape, or undefined when a fixed literal differs. */
export function constantsOf(map: LexicalMap, lexical: LexicalShape): Constant[] | undefined {
  for (const [index, value] of map.fixed) if (lexical.literals[index]?.value !== value) return undefined;
  const out: Constant[] = [];
  for (const c of map.constants) {
    const literal = lexical.literals[c.literal];
    if (!literal) return undefined;
    if (literal.string) {
      out.push({ kind: 's', text: quote(literal.value), value: literal.value });
      continue;
    }
    const value = c.negative ? `-${literal.value}` : literal.value;
    // Integers here have at most 9 digits (int4 either way); decimals are numeric.
    const kind: ConstantKind = literal.value.includes('.') ? (c.negative ? 'f-' : 'f') : c.negative ? 'i-' : 'i';
    if (kind !== c.kind) return undefined;
    const canonical = kind.startsWith('i') ? String(Number(value)) : value;
    out.push({ kind, text: c.negative ? `(${canonical})` : canonical, value: canonical });
  }
  return out;
}
