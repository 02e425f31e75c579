import type { SectionProps } from '../sections.js';

/** Tables: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Tables</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
