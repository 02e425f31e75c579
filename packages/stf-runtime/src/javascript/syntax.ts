/**
 * How STF code is handed to QuickJS and how a compile error is reported, shared by the run (engine.ts) and the
 * save-time check (compile-check.ts) so that both compile the same text and report the same line and column.
 */
import type { ProgramForm } from './program.js';

export const SCRIPT_FILE = 'stf.js';
export const MODULE_FILE = 'stf.mjs';
/**
 * The script form is the body of an async function; the prefix (and the form's head of imports) stays on line 1 so
 * line numbers are the user's.
 */
const SCRIPT_PREFIX = '(async function () {';
const SCRIPT_SUFFIX = '\n})';

type ScriptForm = Extract<ProgramForm, { kind: 'script' }>;

/** The source QuickJS compiles for the script form (evaluated as global code, it yields the async function). */
export function wrapScript(form: ScriptForm): string {
  return SCRIPT_PREFIX + form.head + form.body + SCRIPT_SUFFIX;
}

/** Characters in front of the user's line 1 in what QuickJS compiled. */
const lineOneShift = (form: ProgramForm) => (form.kind === 'module' ? 0 : SCRIPT_PREFIX.length + form.head.length);

/** What the host reads of a thrown value. */
export interface ErrorInfo {
  name?: string;
  message: string;
  stack?: string;
  fileName?: string;
  lineNumber?: number;
}

export interface SyntaxFailure {
  /** `SyntaxError: <QuickJS's message>`. */
  message: string;
  /** `line L, column C`, then (for a line of at most 500 characters) that line and a caret under column C. */
  details: string;
  /** 1-based, in the user's code. */
  line: number;
  /** 1-based, in code points of the user's line. */
  column: number;
}

/** In the script form, columns on line 1 include the wrapper's prefix and the head; give the user's columns instead. */
export function fixScriptLocations(stack: string, form: ProgramForm): string {
  const shift = lineOneShift(form);
  if (shift === 0) return stack;
  return stack.replace(/\bstf\.js:1:(\d+)/g, (_m, col: string) => `stf.js:1:${Math.max(1, Number(col) - shift)}`);
}

/**
 * The syntax error of a failed compile of the user's code (script or module form), located in the user's own
 * coordinates; undefined when `info` is not a SyntaxError with a position in the user's file.
 */
export function syntaxFailure(info: ErrorInfo, code: string, form: ProgramForm): SyntaxFailure | undefined {
  const file = form.kind === 'module' ? MODULE_FILE : SCRIPT_FILE;
  if (info.name !== 'SyntaxError' || info.fileName !== file) return undefined;
  const firstFrame = fixScriptLocations(info.stack ?? '', form).split('\n')[0] ?? '';
  const at = new RegExp(`^\\s*at ${file.replace('.', '\\.')}:(\\d+):(\\d+)\\s*$`).exec(firstFrame);
  if (!at) return undefined;
  const lines = code.split('\n');
  let line = Number(at[1]);
  let column = Number(at[2]);
  let message = `SyntaxError: ${info.message}`;
  if (line > lines.length) {
    // In the script wrapper's suffix, so QuickJS's message names the wrapper's tokens: the code ended too early (a
    // brace, bracket, string or comment left open, an operand missing). Point just after the last thing written.
    let last = lines.length - 1;
    while (last > 0 && (lines[last] ?? '').trim() === '') last--;
    line = last + 1;
    column = [...(lines[last] ?? '').replace(/\s+$/, '')].length + 1;
    message = 'SyntaxError: unexpected end of the code';
  }
  const source = lines[line - 1]?.replace(/\r$/, '');
  let details = `line ${line}, column ${column}`;
  if (source !== undefined && source.length <= 500) {
    // Tabs stay tabs so the caret lines up under the column.
    const pad = [...source].slice(0, Math.max(0, column - 1)).map((ch) => (ch === '\t' ? '\t' : ' '));
    details += `\n${source}\n${pad.join('')}^`;
  }
  return { message, details, line, column };
}
