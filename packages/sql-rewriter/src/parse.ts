import { ServiceError } from '@wds/errors';
import { loadModule, parseSync } from 'libpg-query';

let loaded: Promise<void> | undefined;
/** Loads the parser's WebAssembly once (about 30 ms); afterwards parsing is synchronous. */
export const loadParser = (): Promise<void> => (loaded ??= loadModule());

// biome-ignore lint/suspicious/noExplicitAny: the libpg-query AST is JSON whose shape depends on the node tag
export type AnyNode = any;

export interface ParsedStatement {
  /** `{ version, stmts: [one RawStmt] }`, the shape the deparser takes. */
  tree: AnyNode;
  /** The statement node itself, e.g. `{ SelectStmt: {...} }`. */
  stmt: AnyNode;
  tag: string;
}

export function parseOne(sql: string): ParsedStatement {
  let tree: AnyNode;
  try {
    tree = parseSync(sql);
  } catch (err) {
    const e = err as Error & { sqlDetails?: { cursorPosition?: number } };
    const pos = e.sqlDetails?.cursorPosition;
    throw new ServiceError('PARSE_ERROR', `SQL syntax error: ${e.message}`, pos === undefined ? undefined : `at character ${pos + 1}`);
  }
  const stmts = tree.stmts ?? [];
  if (stmts.length === 0) throw new ServiceError('PARSE_ERROR', 'Empty SQL: send exactly one statement');
  if (stmts.length > 1) {
    throw new ServiceError('MULTIPLE_STATEMENTS', `Send exactly one statement per request (got ${stmts.length})`);
  }
  const stmt = stmts[0].stmt;
  return { tree, stmt, tag: Object.keys(stmt)[0] as string };
}
