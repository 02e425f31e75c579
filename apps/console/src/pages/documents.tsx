import type { SectionProps } from '../sections.js';

/** Documents: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Documents</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
