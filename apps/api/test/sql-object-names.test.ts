import { describe, expect, test } from './support.js';

/**
 * Index and constraint names as long as PostgreSQL allows (schemas written for the origin platform name indexes like
 * `idx_account_balances_account`): each maps to a physical name of its workspace, the same for CREATE and DROP, and
 * two workspaces using one name never meet.
 */
describe('long index and constraint names', () => {
  test('create, use and drop them; another workspace has its own', async ({ h, owner, ws }) => {
    const sql = (token: string, id: string, q: string) => h.sql(token, id, q);
    await h.sqlOk(owner.token, ws.id, 'CREATE TABLE account_balances (account_id int, period int, amount int, CONSTRAINT account_balances_account_period_key UNIQUE (account_id, period))');
    await h.sqlOk(owner.token, ws.id, 'CREATE INDEX idx_account_balances_account ON account_balances (account_id)');
    await h.sqlOk(owner.token, ws.id, 'CREATE INDEX idx_account_balances_period ON account_balances (period)');
    const again = await sql(owner.token, ws.id, 'CREATE INDEX idx_account_balances_account ON account_balances (amount)');
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/already exists/);
    expect(JSON.stringify(again.body)).not.toMatch(/ws_[0-9a-f]{8}_/);

    await h.allowAll(owner.token, ws.id, [owner.id], ['account_balances']);
    const upsert = 'INSERT INTO account_balances (account_id, period, amount) VALUES (1, 1, 5) ON CONFLICT ON CONSTRAINT account_balances_account_period_key DO UPDATE SET amount = account_balances.amount + 1';
    await h.sqlOk(owner.token, ws.id, upsert);
    await h.sqlOk(owner.token, ws.id, upsert);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT amount FROM account_balances')).rows).toEqual([{ amount: 6 }]);

    // Another workspace: the same names are its own.
    const mallory = await h.user('mallory');
    const hers = await h.workspace(mallory.token, 'hers');
    await h.sqlOk(mallory.token, hers.id, 'CREATE TABLE account_balances (account_id int)');
    await h.sqlOk(mallory.token, hers.id, 'CREATE INDEX idx_account_balances_account ON account_balances (account_id)');
    await h.sqlOk(mallory.token, hers.id, 'DROP INDEX idx_account_balances_account');
    // Ours is still there: creating it again is refused, dropping it works.
    expect((await sql(owner.token, ws.id, 'CREATE INDEX idx_account_balances_account ON account_balances (amount)')).status).toBe(400);
    await h.sqlOk(owner.token, ws.id, 'DROP INDEX idx_account_balances_account');
    await h.sqlOk(owner.token, ws.id, 'CREATE INDEX idx_account_balances_account ON account_balances (amount)');

    // Not a lower-case identifier, or spelling a workspace prefix: refused. (Past 63 characters PostgreSQL's own
    // parser cuts a name to 63, as it does everywhere.)
    const quoted = await sql(owner.token, ws.id, 'CREATE INDEX "Idx Account" ON account_balances (amount)');
    expect(quoted.status).toBe(400);
    expect(quoted.body.code).toBe('INVALID_TABLE');
    const physical = await sql(owner.token, ws.id, `CREATE INDEX ws_${hers.id.replace(/-/g, '_')}_x ON account_balances (amount)`);
    expect(physical.status).toBe(400);
  });
});
