import { PostgreSQL, sql } from '@codemirror/lang-sql';
import type { Extension } from '@codemirror/state';

/** SQL (PostgreSQL) with completion of the workspace's tables and columns: a chunk of its own (ui/editor.tsx). */
export const languageOf = (schema?: Record<string, string[]>): Extension => sql({ dialect: PostgreSQL, upperCaseKeywords: true, ...(schema ? { schema } : {}) });
