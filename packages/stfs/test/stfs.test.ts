import '@wds/testkit';
import { randomBytes } from 'node:crypto';
import { SecretBox } from '@wds/crypto';
import { createDb, migrateToLatest, newId, asUuid } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  addVersion,
  createStf,
  deleteSecret,
  getStf,
  listSecretKeys,
  listStfs,
  listVersions,
  newestStfVersions,
  openSealedSecrets,
  openSecrets,
  ownNewestStfVersions,
  resolveStepStfVersions,
  resolveVersion,
  softDeleteStf,
  updateStf,
  upsertSecret,
} from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();
const B = newId();
const box = SecretBox.fromBase64(randomBytes(32).toString('base64'));
const page = { limit: 100, offset: 0 };
const code = (s: string) => Buffer.from(s);

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'stfs' }), { max: 2 }).db;
  await migrateToLatest(db);
  await db.insertInto('platform.workspaces').values([{ id: A, name: 'a' }, { id: B, name: 'b' }]).execute();
});
afterAll(() => db.destroy());

describe('STFs and versions', () => {
  it('create, list with the latest version, update, add versions, resolve, soft delete', async () => {
    const { stf, version } = await createStf(db, A, {
      name: 'double',
      createdBy: null,
      version: { version: '1.0.0', runtime: 'javascript', code: code('return $input.n * 2'), input_schema: { type: 'object' } },
    });
    expect(stf.latest_version).toEqual({ id: version.id, version: '1.0.0', runtime: 'javascript' });
    expect(version.code).toBe(code('return $input.n * 2').toString('base64'));
    expect(version.input_schema).toEqual({ type: 'object' });

    await expect(addVersion(db, A, asUuid(stf.id), { version: '1.0.0', runtime: 'javascript', code: code('x') }, null)).rejects.toMatchObject({ code: 'CONFLICT' });
    const v2 = await addVersion(db, A, asUuid(stf.id), { version: '1.1.0', runtime: 'javascript', code: code('return 2') }, null);
    expect((await getStf(db, A, asUuid(stf.id))).latest_version?.version).toBe('1.1.0');
    expect((await listVersions(db, A, asUuid(stf.id), page)).map((v) => v.version)).toEqual(['1.1.0', '1.0.0']);
    expect((await resolveVersion(db, A, { stfId: stf.id })).id).toBe(v2.id);
    expect((await resolveVersion(db, A, { stfVersionId: version.id })).version).toBe('1.0.0');

    expect((await updateStf(db, A, asUuid(stf.id), { description: 'doubles', is_public: true })).is_public).toBe(true);
    expect((await listStfs(db, A, page)).map((s) => s.name)).toContain('double');

    await softDeleteStf(db, A, asUuid(stf.id));
    await expect(getStf(db, A, asUuid(stf.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveVersion(db, A, { stfVersionId: v2.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await listStfs(db, A, page)).map((s) => s.id)).not.toContain(stf.id);
  });

  it('another workspace sees none of it', async () => {
    const { stf, version } = await createStf(db, A, { name: 'private', createdBy: null, version: { version: '1', runtime: 'javascript', code: code('1') } });
    await expect(getStf(db, B, asUuid(stf.id))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(resolveVersion(db, B, { stfVersionId: version.id })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(addVersion(db, B, asUuid(stf.id), { version: '2', runtime: 'javascript', code: code('2') }, null)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await listStfs(db, B, page)).toEqual([]);
  });
});

describe('secrets', () => {
  it('are sealed at rest, listed by key only, opened for a run, replaced and deleted', async () => {
    const { stf } = await createStf(db, A, { name: 's', createdBy: null, version: { version: '1', runtime: 'javascript', code: code('1') } });
    await upsertSecret(db, box, stf.id, 'API_TOKEN', 'tok-123-secret');
    await upsertSecret(db, box, stf.id, 'API_TOKEN', 'tok-456-secret');
    await upsertSecret(db, box, stf.id, 'OTHER', 'x');
    const keys = await listSecretKeys(db, stf.id);
    expect(keys.map((k) => k.env_key)).toEqual(['API_TOKEN', 'OTHER']);
    expect(JSON.stringify(keys)).not.toContain('tok-');
    const raw = await db.selectFrom('platform.stf_secrets').selectAll().execute();
    expect(raw.some((r) => r.sealed_value.includes(Buffer.from('tok-')))).toBe(false);
    expect(await openSecrets(db, box, stf.id)).toEqual({ API_TOKEN: 'tok-456-secret', OTHER: 'x' });
    await deleteSecret(db, stf.id, 'OTHER');
    await expect(deleteSecret(db, stf.id, 'OTHER')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(upsertSecret(db, box, stf.id, '1BAD', 'x')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(upsertSecret(db, box, stf.id, 'BIG', 'x'.repeat(70_000))).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('a sealed value moved to another STF does not open', async () => {
    const one = (await createStf(db, A, { name: 'one', createdBy: null, version: { version: '1', runtime: 'javascript', code: code('1') } })).stf;
    const two = (await createStf(db, A, { name: 'two', createdBy: null, version: { version: '1', runtime: 'javascript', code: code('1') } })).stf;
    await upsertSecret(db, box, one.id, 'K', 'v');
    const sealed = await db.selectFrom('platform.stf_secrets').select('sealed_value').where('stf_id', '=', one.id).executeTakeFirstOrThrow();
    await db.insertInto('platform.stf_secrets').values({ stf_id: two.id, env_key: 'K', sealed_value: sealed.sealed_value }).execute();
    await expect(openSecrets(db, box, two.id)).rejects.toThrow();
  });
});

describe('resolveVersion by label', () => {
  it('finds a version of an STF by its label, and 404s for an unknown one', async () => {
    const { stf } = await createStf(db, A, { name: 'labels', createdBy: null, version: { version: '1.0', runtime: 'javascript', code: code('1') } });
    await addVersion(db, A, asUuid(stf.id), { version: '2.0', runtime: 'javascript', code: code('2') }, null);
    expect((await resolveVersion(db, A, { stfId: stf.id, label: '1.0' })).version).toBe('1.0');
    expect((await resolveVersion(db, A, { stfId: stf.id })).version).toBe('2.0');
    await expect(resolveVersion(db, A, { stfId: stf.id, label: '9' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('the versions workflow steps run', () => {
  it('pinned: exactly the one named; else the newest of its STF, with its sealed secrets; gone or foreign: nothing', async () => {
    const [ada, bob] = [newId(), newId()];
    await db.insertInto('platform.users').values([{ id: ada, email: `${ada}@x.test`, name: 'Ada' }, { id: bob, email: `${bob}@x.test`, name: 'Bob' }]).execute();
    const { stf, version: v1 } = await createStf(db, A, { name: 'steps', createdBy: ada, version: { version: '1', runtime: 'javascript', code: code('return 1') } });
    const v2 = await addVersion(db, A, asUuid(stf.id), { version: '2', runtime: 'wasm', code: code('two') }, bob);
    const v3 = await addVersion(db, A, asUuid(stf.id), { version: '3', runtime: 'javascript', code: code('return 3') }, ada);
    await upsertSecret(db, box, stf.id, 'TOKEN', 's3cret');
    const { version: foreign } = await createStf(db, B, { name: 'steps', createdBy: null, version: { version: '1', runtime: 'javascript', code: code('b') } });

    const got = await resolveStepStfVersions(db, A, [
      { id: v1.id, pin: false },
      { id: v2.id, pin: true },
      { id: foreign.id, pin: true },
    ]);
    expect(got.map((r) => r && [r.stf_id, r.stf_version_id, r.version, r.runtime, r.code.toString()])).toEqual([
      [stf.id, v3.id, '3', 'javascript', 'return 3'],
      [stf.id, v2.id, '2', 'wasm', 'two'],
      undefined,
    ]);
    expect(got[0]?.sealed_secrets.map((k) => [k.env_key, openSealedSecrets(box, stf.id, [k]).TOKEN])).toEqual([['TOKEN', 's3cret']]);
    expect(await resolveStepStfVersions(db, A, [])).toEqual([]);

    expect(await newestStfVersions(db, A, [v1.id, v2.id, foreign.id, 'not-a-uuid'])).toEqual({ [v1.id]: v3.id, [v2.id]: v3.id });
    // From v1: the newest that is v1 or newer and Bob's is v2 (v3 is Ada's); for Ada it is v3; anonymous keeps v1.
    expect(await ownNewestStfVersions(db, A, { r: v1.id }, bob)).toEqual({});
    expect(await ownNewestStfVersions(db, A, { [v1.id]: v1.id, [foreign.id]: foreign.id }, bob)).toEqual({ [v1.id]: v2.id });
    expect(await ownNewestStfVersions(db, A, { [v1.id]: v1.id }, ada)).toEqual({ [v1.id]: v3.id });
    expect(await ownNewestStfVersions(db, A, { [v2.id]: v1.id }, null)).toEqual({ [v2.id]: v1.id });

    await softDeleteStf(db, A, asUuid(stf.id));
    expect(await resolveStepStfVersions(db, A, [{ id: v1.id, pin: true }])).toEqual([undefined]);
    expect(await newestStfVersions(db, A, [v1.id])).toEqual({});
    expect(await ownNewestStfVersions(db, A, { [v1.id]: v1.id }, ada)).toEqual({});
  });
});
