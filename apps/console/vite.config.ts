import { defineConfig } from 'vite';

// Built to dist/ and served by the API process under /console/ (apps/api/src/http/console.ts): hashed asset names,
// no inline script (the page's Content-Security-Policy is script-src 'self'), nothing fetched from elsewhere.
export default defineConfig({
  base: '/console/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    rollupOptions: {
      output: {
        // CodeMirror's core, shared by the SQL and the JavaScript editor, is one chunk with a name (rather than
        // "index-…" chunks Rollup would split it into); each language stays a chunk of its own (ui/lang-*.ts).
        manualChunks: (id) =>
          /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?(@codemirror\/(view|state|language|commands|autocomplete)|@lezer\/(common|highlight|lr)|style-mod|w3c-keyname|crelt|@marijn\/find-cluster-break)\//.test(id)
            ? 'codemirror-core'
            : undefined,
      },
    },
  },
});
