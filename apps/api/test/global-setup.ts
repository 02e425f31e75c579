import { createDb, migrateToLatest } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import startPostgres from '@wds/testkit/global-setup';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A database migrated to the latest version once per run, which `Harness.create` copies for each test file. */
    apiTemplateDatabase: string;
  }
}

/**
 * vitest globalSetup of apps/api: the run's PostgreSQL server (testkit), and on it one database migrated once,
 * closed to connections, that every test file's fresh database is a copy of (`CREATE DATABASE … TEMPLATE`) instead of
 * running every migration again. What the migrations create outside the database (roles) is on the server already.
 */
export default async function setup(project: Pick<TestProject, 'provide'>): Promise<() => Promise<void>> {
  let serverUrl: string | undefined;
  const stop = await startPostgres({
    provide: ((key: string, value: unknown) => {
      if (key === 'pgServerUrl') serverUrl = value as string;
      (project.provide as (k: string, v: unknown) => void)(key, value);
    }) as TestProject['provide'],
  });
  if (!serverUrl) throw new Error('the PostgreSQL setup provided no pgServerUrl');
  const url = await createDatabase(serverUrl, { prefix: 'api_template' });
  const { db } = createDb(url, { max: 1 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  project.provide('apiTemplateDatabase', decodeURIComponent(new URL(url).pathname.slice(1)));
  return stop;
}
