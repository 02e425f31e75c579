import type { SectionProps } from '../sections.js';

/** Members and settings: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Members and settings</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
