import type { TestProject } from 'vitest/node';
import { startTestPostgres } from './server.js';
import './vitest-context.js';

/** vitest globalSetup: one PostgreSQL server per run, available in tests as `inject('pgServerUrl')`. */
export default async function setup({ provide }: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  const server = await startTestPostgres();
  provide('pgServerUrl', server.url);
  return () => server.stop();
}
