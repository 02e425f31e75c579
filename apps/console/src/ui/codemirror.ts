import { autocompletion, closeBrackets, closeBracketsKeymap, completionKeymap } from '@codemirror/autocomplete';
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { HighlightStyle, bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from '@codemirror/language';
import { Compartment, EditorState, type Extension, Prec } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, keymap, lineNumbers, placeholder } from '@codemirror/view';

/**
 * CodeMirror 6, in a chunk of its own (ui/editor.tsx loads it the first time an editor is shown). The editor lives
 * in a shadow root of its host: there CodeMirror puts its styles into a constructed style sheet (adoptedStyleSheets),
 * which the page's `style-src 'self'` allows, where in the document itself it would add a <style> element, which
 * that policy refuses. So the console's own style sheet does not reach inside: the editor's look is `look` below.
 */
export interface EditorOptions {
  parent: HTMLElement;
  /** The language's support (lang-sql.ts or lang-javascript.ts, each a chunk of its own), given the SQL schema. */
  languageOf: (schema?: Record<string, string[]>) => Extension;
  value: string;
  label: string;
  placeholder?: string;
  onChange: (value: string) => void;
  onRun?: () => void;
  /** Tables and their columns for SQL completion. */
  schema?: Record<string, string[]>;
}

export interface EditorHandle {
  set(value: string): void;
  setSchema(schema: Record<string, string[]>): void;
  focus(): void;
  destroy(): void;
}

const look = EditorView.theme({
  '&': { minHeight: '8rem', fontSize: '.95rem', border: '1px solid #8a93a3', borderRadius: '.3rem', background: '#fff' },
  '&.cm-focused': { outline: '3px solid #1547a8', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, SFMono-Regular, Menlo, monospace', minHeight: '8rem' },
  '.cm-gutters': { background: '#f4f5f7', color: '#4a5263', borderRight: '1px solid #d5d9e0' },
  '.cm-activeLine': { background: '#f1f5fd' },
  '.cm-activeLineGutter': { background: '#e3eaf8' },
});

/**
 * CodeMirror's default colours, each darkened where needed to a contrast of at least 4.5:1 on the active line's
 * background (#f1f5fd): its #e40 (quoted identifiers, escapes), #f00 and #085 are lighter than that.
 */
const highlight = (() => {
  const lum = (c: number[]) => {
    const [r, g, b] = c.map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4)) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = lum([0xf1, 0xf5, 0xfd]);
  const darken = (color: string): string => {
    const hex = color.length === 4 ? [...color.slice(1)].map((d) => d + d).join('') : color.slice(1);
    let rgb = [0, 2, 4].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
    if (rgb.some(Number.isNaN)) return color;
    while ((background + 0.05) / (lum(rgb) + 0.05) < 4.6) rgb = rgb.map((v) => Math.floor(v * 0.9));
    return `#${rgb.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
  };
  return HighlightStyle.define(defaultHighlightStyle.specs.map((s) => (typeof s.color === 'string' && s.color.startsWith('#') ? { ...s, color: darken(s.color) } : s)));
})();

export function createEditor(o: EditorOptions): EditorHandle {
  const lang = new Compartment();
  const shadow = o.parent.shadowRoot ?? o.parent.attachShadow({ mode: 'open' });
  const parent = document.createElement('div');
  shadow.append(parent);
  const { languageOf } = o;
  let run = o.onRun;
  const view = new EditorView({
    root: shadow,
    parent,
    state: EditorState.create({
      doc: o.value,
      extensions: [
        look,
        lineNumbers(),
        history(),
        drawSelection(),
        indentOnInput(),
        bracketMatching(),
        closeBrackets(),
        highlightActiveLine(),
        autocompletion(),
        syntaxHighlighting(highlight, { fallback: true }),
        lang.of(languageOf(o.schema)),
        // Ctrl/Cmd+Enter runs, before any other key binding sees it.
        Prec.highest(
          keymap.of([
            {
              key: 'Mod-Enter',
              run: () => {
                run?.();
                return true;
              },
            },
          ]),
        ),
        keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
        // Typing over a selection: Chrome's own editing would carry the replaced text's look over as a style attribute,
        // which the page's style-src refuses (a CSP violation report); the editor makes that change itself instead.
        EditorView.domEventHandlers({
          beforeinput: (e, view) => {
            if ((e.inputType !== 'insertText' && e.inputType !== 'insertReplacementText') || !e.data || view.state.selection.main.empty) return false;
            e.preventDefault();
            view.dispatch(view.state.replaceSelection(e.data), { userEvent: 'input.type', scrollIntoView: true });
            return true;
          },
        }),
        EditorView.contentAttributes.of({ 'aria-label': o.label, 'aria-multiline': 'true' }),
        EditorView.lineWrapping,
        ...(o.placeholder ? [placeholder(o.placeholder)] : []),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) o.onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  return {
    set: (value) => {
      if (value !== view.state.doc.toString()) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: value } });
    },
    setSchema: (schema) => view.dispatch({ effects: lang.reconfigure(languageOf(schema)) }),
    focus: () => view.focus(),
    destroy: () => {
      run = undefined;
      view.destroy();
      parent.remove();
    },
  };
}
