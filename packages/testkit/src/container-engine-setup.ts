import type { TestProject } from 'vitest/node';
import { startContainerEngine } from './container-engine.js';
import './vitest-context.js';

/**
 * vitest globalSetup: a container engine for the docker runtime's tests, available as `inject('dockerHost')`,
 * with its images as `inject('dockerImages')`.
 */
export default async function setup({ provide }: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  const engine = await startContainerEngine();
  provide('dockerHost', engine.dockerHost);
  provide('dockerImages', engine.images);
  return () => engine.stop();
}
