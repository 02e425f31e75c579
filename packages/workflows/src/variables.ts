/**
 * Workflow variables (DECISIONS §7): `$input`, `$input.a.b`, `$sources.<name>`, `$sources.<name>.x`, `$steps[n]`,
 * `$steps[n].a` (array indices allowed in the rest: `$input.items[0].sku`). A missing field reads as null.
 */
import { readPath } from '@wds/effect-runner';
import type { FieldMapping } from './definition.js';

/** Targets that would reach an object's prototype; refused when saved (check.ts), skipped if met at run time. */
export const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export type Root = { kind: 'input'; rest: string } | { kind: 'sources'; name: string; rest: string } | { kind: 'steps'; index: number; rest: string };

const SOURCES = /^\$sources\.([A-Za-z_][A-Za-z0-9_]*)(.*)$/;
const STEPS = /^\$steps\[(\d{1,4})\](.*)$/;
const REST = /^((\.[A-Za-z_$][\w$-]*)|(\[\d+\]))*$/;

/** Parses a variable; a string that is not one of the roots (or has a malformed rest) answers an error message. */
export function parseVariable(text: string): Root | { error: string } {
  const value = text.trim();
  let root: Root;
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
