/**
 * Workflow variables (docs/workflows.md#definition): `$input`, `$input.a.b`, `$sources.<name>`, `$sources.<name>.x`,
 * `$steps[n]`, `$steps[n].a` (array indices allowed in the rest: `$input.items[0].sku`). A missing field reads as null.
 *
 * The origin platform's older dotted forms are accepted as aliases, each the same as one `$` form, and reported so
 * the run record can say what to write instead (`canonical`): `input`, `input.a` → `$input`, `$input.a`;
 * `sources.<name>`, `sources.<name>.x` → `$sources.<name>`, `$sources.<name>.x`; `steps.<n>.output`,
 * `steps.<n>.output.x` → `$steps[n]`, `$steps[n].x` (in that notation a step's value is under
 * `output`; `steps.<n>` alone or `steps.<n>.x` names no output and is refused). In their rest, `.0` is an index
 * (`[0]`), as in the dotted notation they come from.
 */
import { readPath } from '@wds/effect-runner';
import type { FieldMapping } from './definition.js';

/** Targets that would reach an object's prototype; refused when saved (check.ts), skipped if met at run time. */
export const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

type RootKind = { kind: 'input'; rest: string } | { kind: 'sources'; name: string; rest: string } | { kind: 'steps'; index: number; rest: string };
/** A parsed variable; `canonical` is the `$` form it stands for when it was written in an older dotted form. */
export type Root = RootKind & { canonical?: string };

const NAME = '[A-Za-z0-9_][A-Za-z0-9_-]*';
const SOURCES = new RegExp(`^\\$sources\\.(${NAME})(.*)$`);
const STEPS = /^\$steps\[(\d{1,4})\](.*)$/;
const REST = /^((\.[A-Za-z_$][\w$-]*)|(\[\d+\]))*$/;

const LEGACY_SOURCES = new RegExp(`^sources\\.(${NAME})(.*)$`);
const LEGACY_STEPS = /^steps\.(\d{1,4})(.*)$/;

/** A dotted rest of a legacy form in `$` notation: `.items.0.sku` → `.items[0].sku`. */
const dollarRest = (rest: string) => rest.replace(/\.(\d+)(?=$|[.[])/g, '[$1]');

/** The `$` form of a legacy variable; null when `value` is not written in a legacy form, an error when it is but names nothing. */
function fromLegacy(value: string): string | null | { error: string } {
  if (value === 'input' || value.startsWith('input.') || value.startsWith('input[')) return `$input${dollarRest(value.slice('input'.length))}`;
  const s = LEGACY_SOURCES.exec(value);
  if (s) return `$sources.${s[1]}${dollarRest(s[2] ?? '')}`;
  const t = LEGACY_STEPS.exec(value);
  if (t) {
    const rest = t[2] ?? '';
    if (rest === '.output' || rest.startsWith('.output.') || rest.startsWith('.output[')) return `$steps[${t[1]}]${dollarRest(rest.slice('.output'.length))}`;
    return { error: `${JSON.stringify(value)} names no step output (write steps.${t[1]}.output… or $steps[${t[1]}]…)` };
  }
  return null;
}

function parseDollar(value: string, text: string): RootKind | { error: string } {
  let root: RootKind;
  if (value === '$input' || value.startsWith('$input.') || value.startsWith('$input[')) {
    root = { kind: 'input', rest: value.slice('$input'.length) };
  } else if (SOURCES.test(value)) {
    const m = SOURCES.exec(value) as RegExpExecArray;
    root = { kind: 'sources', name: m[1] as string, rest: m[2] ?? '' };
  } else if (STEPS.test(value)) {
    const m = STEPS.exec(value) as RegExpExecArray;
    root = { kind: 'steps', index: Number(m[1]), rest: m[2] ?? '' };
  } else {
    return { error: `unknown variable root in ${JSON.stringify(text)} (use $input, $sources.<name> or $steps[n])` };
  }
  if (!REST.test(root.rest)) return { error: `malformed path in ${JSON.stringify(text)}` };
  return root;
}

/** Parses a variable; a string that is not one of the roots (or has a malformed rest) answers an error message. */
export function parseVariable(text: string): Root | { error: string } {
  const value = text.trim();
  if (value.startsWith('$')) return parseDollar(value, text);
  const legacy = fromLegacy(value);
  if (legacy === null) return { error: `unknown variable root in ${JSON.stringify(text)} (use $input, $sources.<name> or $steps[n])` };
  if (typeof legacy !== 'string') return legacy;
  const root = parseDollar(legacy, text);
  return 'error' in root ? root : { ...root, canonical: legacy };
}

/** A definition written in a form that still works but has a newer spelling; recorded with the step that used it. */
export interface Deprecation {
  /** Where: `stf_steps[0].input_mappings[1]`, `input_steps[2].source`, `effect_steps[0].effect.body_mappings[0]`. */
  at: string;
  /** What is written there. */
  found: string;
  /** What to write instead; it means the same. */
  use: string;
}

/** The Variable mappings of a step (at `where`) written in a legacy form, with their `$` form. */
export function legacyMappings(where: string, mappings: FieldMapping[]): Deprecation[] {
  const out: Deprecation[] = [];
  mappings.forEach((m, i) => {
    if (m.source.type !== 'Variable') return;
    const root = parseVariable(m.source.value);
    if (!('error' in root) && root.canonical !== undefined) out.push({ at: `${where}.input_mappings[${i}]`, found: m.source.value, use: root.canonical });
  });
  return out;
}

export interface Scope {
  input: unknown;
  sources: Record<string, unknown>;
  /** Outputs of the STF steps run so far. */
  steps: unknown[];
}

/** The value of a variable in a scope (checked when the workflow was saved; anything missing is null). */
export function readVariable(text: string, scope: Scope): unknown {
  const root = parseVariable(text);
  if ('error' in root) return null;
  const rest = root.rest.replace(/^\./, '');
  switch (root.kind) {
    case 'input':
      return readPath(scope.input, rest);
    case 'sources':
      return readPath(scope.sources[root.name] ?? null, rest);
    case 'steps':
      return root.index < scope.steps.length ? readPath(scope.steps[root.index], rest) : null;
  }
}

/**
 * Builds a step's input from its mappings: each target gets its value (a Variable read from the scope, a Const as
 * written); dotted targets nest (`customer.email`); the target `$` (or an empty one) makes the value the whole
 * input. Without mappings the input is `fallback` (the previous STF step's output, or `$input`).
 */
export function buildStepInput(mappings: FieldMapping[], scope: Scope, fallback: unknown): unknown {
  if (mappings.length === 0) return fallback;
  let whole: unknown;
  let hasWhole = false;
  const out: Record<string, unknown> = {};
  for (const m of mappings) {
    const value = m.source.type === 'Const' ? m.source.value : readVariable(m.source.value, scope);
    const target = m.target.trim();
    if (target === '' || target === '$') {
      whole = value;
      hasWhole = true;
      continue;
    }
    const keys = target.split('.');
    if (keys.some((k) => UNSAFE_KEYS.has(k))) continue;
    let node = out;
    for (const key of keys.slice(0, -1)) {
      const next = node[key];
      if (next && typeof next === 'object' && !Array.isArray(next)) {
        node = next as Record<string, unknown>;
      } else {
        const child: Record<string, unknown> = {};
        node[key] = child;
        node = child;
      }
    }
    node[keys[keys.length - 1] as string] = value;
  }
  if (!hasWhole) return out;
  // A whole value and named targets together: named targets are merged into an object value.
  if (Object.keys(out).length === 0) return whole;
  return whole && typeof whole === 'object' && !Array.isArray(whole) ? { ...(whole as object), ...out } : out;
}
