import type { SectionProps } from '../sections.js';

/** SQL editor: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>SQL editor</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
