import type { SectionProps } from '../sections.js';

/** Workflows and runs: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Workflows and runs</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
