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
  },
});
