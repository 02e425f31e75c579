import type { SectionProps } from '../sections.js';

/** Policies: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Policies</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
