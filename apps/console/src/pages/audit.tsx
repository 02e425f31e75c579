import type { SectionProps } from '../sections.js';

/** Audit log: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Audit log</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
