import type { Columns } from '../src/index.js';

/** The types the tests' columns have, by name (the rewriter reads them from pg_type in the service). */
const TYPES: Record<string, string> = {
  id: 'text',
  owner: 'text',
  total: 'numeric',
  meta: 'jsonb',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
  deleted_at: 'timestamptz',
  order_id: 'text',
  name: 'text',
  title: 'text',
  status: 'text',
  x: 'int4',
};

/** A table's columns for a test catalog, typed by TYPES. */
export const columns = (names: string[]): Columns => new Map(names.map((n) => [n, TYPES[n] ?? 'text']));
