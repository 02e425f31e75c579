import type { SectionProps } from '../sections.js';

/** Dashboard: not built yet (issue 32). */
export default function Page(_: SectionProps) {
  return (
    <>
      <h1>Dashboard</h1>
      <p>This page is not built yet.</p>
    </>
  );
}
