import type { Node } from '@pgsql/types';
import { deparseSync } from 'pgsql-deparser';

/**
 * The SQL text of one expression node (a compiled policy filter), for people to read: what the rewriter puts into a
 * statement for a policy (docs/sql-and-policies.md#explain). Never executed, so not verified like a statement.
 */
export function printExpression(node: Node): string {
  const text = deparseSync({ version: 0, stmts: [{ stmt: { SelectStmt: { targetList: [{ ResTarget: { val: node } }], limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' } } }] } as never, { pretty: false });
  return text.replace(/^SELECT /, '');
}
