import type { SectionProps } from '../sections.js';

/** STFs and effects: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>STFs and effects</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
