import { javascript } from '@codemirror/lang-javascript';
import type { Extension } from '@codemirror/state';

/** JavaScript (the STF editor): a chunk of its own, so the SQL editor never loads its grammar (ui/editor.tsx). */
export const languageOf = (_schema?: Record<string, string[]>): Extension => javascript();
