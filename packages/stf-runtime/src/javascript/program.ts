/**
 * Which form a JavaScript STF's code is — decided from the parsed program, never from the words in it (issue 17;
 * docs/stfs.md#the-javascript-runtime):
 *
 * - **module**: the program exports something (`export default …`, `export { f as default }`, `export const …`):
 *   run as an ES module whose default export is called with the input.
 * - **script**: anything else, the origin platform's form: the body of an async function that ends in `return`.
 *   Its static `import … from '<name>'` declarations (allowed in a script on the origin, which rewrites them to
 *   globals) become `await import('<name>')` statements of the same library, run before any of the code — hoisted,
 *   as a module's imports are — in a `head` put in front of the first line, while the declarations themselves are
 *   blanked to spaces, so every line and column of the code stays where the user wrote it.
 *
 * The parse is acorn's (strict module grammar, with top-level `return` and `await` allowed). Code that does not parse
 * as a module (sloppy-mode code: `with`, legacy octal literals, …) is a script when it parses as one. When it parses
 * as neither, the form whose parse got further is compiled, so that QuickJS reports the real syntax error.
 */
import { type ImportDeclaration, type Node, type Options, type Program, parse } from 'acorn';

export type ProgramForm =
  | { kind: 'module' }
  /** `head`: the imports, run first; `body`: the user's code with the import declarations (and a hashbang) blanked. */
  | { kind: 'script'; head: string; body: string };

const COMMON: Omit<Options, 'sourceType'> = {
  ecmaVersion: 'latest',
  allowReturnOutsideFunction: true,
  allowAwaitOutsideFunction: true,
  allowHashBang: true,
  locations: false,
};

/**
 * Classifications kept per worker, keyed by the code itself: runs of one STF do not parse it again. Each entry holds
 * the code twice (the key, and a script's body), which the character budget counts.
 */
const MAX_CACHED = 64;
const MAX_CACHED_CHARS = 16 * 1024 * 1024;
const cache = new Map<string, ProgramForm>();
let cachedChars = 0;

export function classifyProgram(code: string): ProgramForm {
  // Without either word the code has no import or export declaration: a plain script, nothing to parse.
  if (!code.includes('import') && !code.includes('export')) return plainScript(code);
  const hit = cache.get(code);
  if (hit) {
    cache.delete(code);
    cache.set(code, hit);
    return hit;
  }
  const form = classify(code);
  remember(code, form);
  return form;
}

/** Whether `code` runs as an ES module (its program exports something). */
export function isModuleCode(code: string): boolean {
  return classifyProgram(code).kind === 'module';
}

function remember(code: string, form: ProgramForm): void {
  if (code.length > MAX_CACHED_CHARS / 4) return;
  cache.set(code, form);
  cachedChars += 2 * code.length;
  for (const [key] of cache) {
    if (cache.size <= MAX_CACHED && cachedChars <= MAX_CACHED_CHARS) break;
    cache.delete(key);
    cachedChars -= 2 * key.length;
  }
}

type Parsed = { program: Program } | { error: number };

function tryParse(code: string, sourceType: 'module' | 'script'): Parsed {
  try {
    return { program: parse(code, { ...COMMON, sourceType }) };
  } catch (e) {
    // A SyntaxError carries `pos`; anything else (a RangeError on absurd nesting) counts as failing at the start.
    const pos = (e as { pos?: unknown }).pos;
    return { error: typeof pos === 'number' ? pos : 0 };
  }
}

function classify(code: string): ProgramForm {
  const asModule = tryParse(code, 'module');
  if ('program' in asModule) {
    const body = asModule.program.body;
    if (body.some(isExport)) return { kind: 'module' };
    const imports = body.filter((n): n is ImportDeclaration => n.type === 'ImportDeclaration');
    return { kind: 'script', head: imports.map((d, i) => importStatement(d, `__stf_import_${i}`)).join(' '), body: blank(hashbangless(code), imports) };
  }
  const asScript = tryParse(code, 'script');
  if ('program' in asScript) return plainScript(code);
  return asModule.error > asScript.error ? { kind: 'module' } : plainScript(code);
}

/** A script without imports: the code as it is (a hashbang line made a comment: a function body cannot have one). */
function plainScript(code: string): ProgramForm {
  return { kind: 'script', head: '', body: hashbangless(code) };
}

function hashbangless(code: string): string {
  return code.startsWith('#!') ? `//${code.slice(2)}` : code;
}

function isExport(n: Node): boolean {
  return n.type === 'ExportDefaultDeclaration' || n.type === 'ExportNamedDeclaration' || n.type === 'ExportAllDeclaration';
}

/** The code with each import declaration replaced by spaces (its line breaks kept), so nothing else moves. */
function blank(code: string, imports: ImportDeclaration[]): string {
  let out = '';
  let at = 0;
  for (const d of imports) {
    out += code.slice(at, d.start) + code.slice(d.start, d.end).replace(/[^\r\n\u2028\u2029]/g, ' ');
    at = d.end;
  }
  return out + code.slice(at);
}

/**
 * One import declaration as statements of the head. A default import is the library's `default` export, or the
 * library itself when it has none (as the origin's globals are: `import XLSX from '@d6e-ai/xlsx'`).
 */
function importStatement(d: ImportDeclaration, temp: string): string {
  const from = `await import(${JSON.stringify(String(d.source.value))})`;
  if (d.specifiers.length === 0) return `${from};`;
  const parts: string[] = [`const ${temp} = ${from};`];
  const named: string[] = [];
  for (const s of d.specifiers) {
    if (s.type === 'ImportNamespaceSpecifier') {
      parts.push(`const ${s.local.name} = ${temp};`);
    } else if (s.type === 'ImportDefaultSpecifier') {
      parts.push(`const ${s.local.name} = ${temp}.default !== undefined ? ${temp}.default : ${temp};`);
    } else {
      const imported = s.imported.type === 'Identifier' ? s.imported.name : JSON.stringify(String(s.imported.value));
      named.push(imported === s.local.name ? imported : `${imported}: ${s.local.name}`);
    }
  }
  if (named.length) parts.push(`const { ${named.join(', ')} } = ${temp};`);
  return parts.join(' ');
}
