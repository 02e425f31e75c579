/** CSS imports are bundled by Vite into the page's stylesheet. */
declare module '*.css';
