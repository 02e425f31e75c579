import '@wds/testkit';
import { createDb, migrateToLatest, newId, sql } from '@wds/db';
import { createDatabase } from '@wds/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type AuditEntry, auditInsert, auditInsertSelect, listAuditLogs, recordAudit } from '../src/index.js';

let db: ReturnType<typeof createDb>['db'];
const A = newId();

beforeAll(async () => {
  db = createDb(await createDatabase(inject('pgServerUrl'), { prefix: 'audit' }), { max: 2 }).db;
  await migrateToLatest(db);
});
afterAll(() => db.destroy());

const entry = (action: string, over: Partial<AuditEntry> = {}): AuditEntry => ({
  workspaceId: A,
  userId: newId(),
  apiKeyId: newId(),
  action,
  resourceType: 'workflow',
  resourceId: 'w1',
  details: { run_id: 'r', n: 1, quote: `it's` },
  requestId: 'req-1',
  transport: 'mcp',
  ...over,
});
const stored = async (action: string) => {
  const [row] = await listAuditLogs(db, { workspaceId: A, action, limit: 10, offset: 0 });
  const { id, created_at, ...rest } = row ?? ({} as never);
  return { id, rest };
};

describe('audit entries, however they are written', () => {
  it('recordAudit, auditInsert inside a statement of the caller and auditInsertSelect store the same row', async () => {
    const e = entry('one');
    await recordAudit(db, e);
    // Inside a data-modifying CTE of the caller: the entry is written by that statement.
    await auditInsert(db.with('work', (q) => q.selectNoFrom(sql<number>`1`.as('n'))), { ...e, action: 'two' }).execute();
    await db.transaction().execute((tx) => auditInsert(tx, { ...e, action: 'three' }).execute());
    await sql`WITH entries AS (${auditInsertSelect(sql`
      SELECT user_data.uuidv7(), ${A}::uuid, ${e.userId}::uuid, ${e.apiKeyId}::uuid, 'four', 'workflow', 'w1',
             ${JSON.stringify(e.details)}::jsonb, 'req-1', 'mcp'`)}) SELECT 1`.execute(db);

    const one = await stored('one');
    expect(one.rest).toEqual({
      workspace_id: A,
      user_id: e.userId,
      api_key_id: e.apiKeyId,
      action: 'one',
      resource_type: 'workflow',
      resource_id: 'w1',
      details: e.details,
      request_id: 'req-1',
      transport: 'mcp',
    });
    for (const action of ['two', 'three', 'four']) {
      const other = await stored(action);
      expect(other.rest).toEqual({ ...one.rest, action });
      expect(other.id).not.toBe(one.id);
    }
  });

  it('an entry without details, request or transport stores {} and nulls', async () => {
    await auditInsert(db, { workspaceId: A, userId: null, apiKeyId: null, action: 'bare', resourceType: 'workflow', resourceId: null }).execute();
    expect((await stored('bare')).rest).toMatchObject({ user_id: null, api_key_id: null, resource_id: null, details: {}, request_id: null, transport: null });
  });
});
