import type { SectionProps } from '../sections.js';

/** Files: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Files</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
