import { useSignal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import type { EditorHandle } from './codemirror.js';

/**
 * A code editor (SQL or JavaScript) with highlighting, completion and Ctrl/Cmd+Enter to run. CodeMirror and each
 * language are chunks of their own, loaded the first time an editor is shown; until then (or if it cannot load) a plain text area stands
 * in, with the same name and the same keys.
 */
export function CodeEditor({
  language,
  value,
  onChange,
  label,
  onRun,
  schema,
  placeholder,
}: {
  language: 'sql' | 'javascript';
  value: string;
  onChange: (value: string) => void;
  /** The editor's accessible name. */
  label: string;
  onRun?: () => void;
  schema?: Record<string, string[]>;
  placeholder?: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const handle = useRef<EditorHandle | null>(null);
  const ready = useSignal(false);
  // The latest value, schema and callbacks: the editor is made once, when its chunk has loaded, from the value and
  // schema of then (not of the first render), and always calls the current callbacks.
  const latest = useRef({ value, schema, onChange, onRun });
  latest.current = { value, schema, onChange, onRun };

  useEffect(() => {
    let gone = false;
    const grammar = language === 'sql' ? import('./lang-sql.js') : import('./lang-javascript.js');
    Promise.all([import('./codemirror.js'), grammar]).then(
      ([{ createEditor }, { languageOf }]) => {
        if (gone || !host.current) return;
        handle.current = createEditor({
          parent: host.current,
          languageOf,
          value: latest.current.value,
          label,
          ...(placeholder ? { placeholder } : {}),
          // The schema as it is now: it may have arrived while CodeMirror was loading.
          ...(latest.current.schema ? { schema: latest.current.schema } : {}),
          onChange: (v) => latest.current.onChange(v),
          onRun: () => latest.current.onRun?.(),
        });
        ready.value = true;
      },
      () => undefined, // the text area stays
    );
    return () => {
      gone = true;
      handle.current?.destroy();
      handle.current = null;
    };
  }, []);
  useEffect(() => handle.current?.set(value), [value]);
  useEffect(() => {
    if (schema) handle.current?.setSchema(schema);
  }, [schema]);

  return (
    <div class="code-editor">
      <div ref={host} hidden={!ready.value} />
      {!ready.value && (
        <textarea
          aria-label={label}
          spellcheck={false}
          rows={8}
          value={value}
          placeholder={placeholder}
          onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
              e.preventDefault();
              onRun?.();
            }
          }}
        />
      )}
    </div>
  );
}
