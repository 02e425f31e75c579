import type { Db } from '@wds/db';
import { freezeDeep, type TopicCache } from '@wds/cache';
import { type StfVersionWithSecrets, loadVersionWithSecrets, type VersionRef } from './stfs.js';

const sizeOf = (v: StfVersionWithSecrets): number =>
  1024 + v.version.code.length + v.sealed_secrets.reduce((n, s) => n + s.env_key.length + s.sealed_value.length + 64, 0);

/**
 * The version a run names, with its STF's sealed secrets: from the run cache when there is one (cache.ts; the
 * workspace's topic drops it on any change of its STFs, versions or secrets), else in one query. The value is
 * shared by the runs that read it: frozen, and never to be changed.
 */
export function runnableVersion(db: Db, cache: TopicCache | undefined, workspaceId: string, ref: VersionRef): Promise<StfVersionWithSecrets> {
  const load = async () => freezeDeep(await loadVersionWithSecrets(db, workspaceId, ref));
  if (!cache) return load();
  // What the query reads, exactly: a version by id, or an STF's version by label or the newest.
  const key =
    ref.stfVersionId !== undefined
      ? `stf-version:${ref.stfVersionId}`
      : `stf:${ref.stfId ?? ''}:${ref.label === undefined ? 'newest' : `label:${JSON.stringify(ref.label)}`}`;
  return cache.throughWorkspace(workspaceId, key, load, sizeOf);
}
