import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Harness, type Res, short } from './support.js';

/**
 * Issue 28, finding 3: the rewriter copies a statement's simple predicates (a column compared with a constant) next
 * to the policy filter so an index can serve them, and PostgreSQL orders the quals of one scan by cost, so a copy can
 * run on a row the filter would hide. A copy that can fail on a row's value (`numeric = float8` casts the column on
 * every row; `1e400` does not fit) turns into an oracle: its error quotes the hidden value, and a cheap second copy
 * (`title < 'A_HIDDEN_4'`) decides whether the failing one is reached, byte by byte.
 *
 * The property tested here is the class, not the example: no answer to the member may depend on a row their select
 * policy hides. Every probe is sent twice, with the hidden row holding the canary values and with the hidden row
 * holding harmless ones, through /sql (reads, UPDATE, DELETE), STF `sql()` and MCP; the two answers must be equal,
 * and no answer may quote the hidden row.
 */

const HIDDEN_TITLE = 'A_HIDDEN_4f1c_title';
/** A numeric no float4/float8 can hold, a date no timestamp can hold, a time-zone-less stamp near its end. */
const HIDDEN = { title: HIDDEN_TITLE, amount: '1e400', day: '5874897-12-31', at: '294276-12-31 23:59:59' };
const HARMLESS = { title: 'Z_visible_to_nobody', amount: '1', day: '2020-01-01', at: '2020-01-01 00:00:00' };

type User = Awaited<ReturnType<Harness['user']>>;
let h: Harness;
let owner: User;
let member: User;
let colleague: User;
let ws: { id: string };
let base: string;

/** Puts the colleague's hidden row into the state `values`. */
async function hide(values: typeof HIDDEN) {
  await h.sqlOk(
    owner.token,
    ws.id,
    `UPDATE ledger SET title = '${values.title}', amount = ${values.amount}, day = '${values.day}', at = '${values.at}' WHERE owner_id = '${colleague.id}'`,
  );
}

beforeAll(async () => {
  h = await Harness.create({ SQL_STATEMENT_TIMEOUT_MS: '60000', STF_TIMEOUT_MS: '30000' });
  base = await h.listen();
  owner = await h.user('owner');
  member = await h.user('member');
  colleague = await h.user('colleague');
  ws = await h.workspace(owner.token, 'Ledger');
  for (const u of [member, colleague]) await h.addMember(owner.token, ws.id, u.email, 'member');
  await h.sqlOk(
    owner.token,
    ws.id,
    'CREATE TABLE ledger (owner_id uuid, category text, title text, amount numeric, day date, at timestamp, n int, ratio float4, meta json)',
  );
  await h.sqlOk(owner.token, ws.id, 'CREATE INDEX ledger_title ON ledger (title)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['ledger']);
  // The hidden row first in the heap, so a scan meets it before the member's rows.
  await h.sqlOk(
    owner.token,
    ws.id,
    `INSERT INTO ledger (owner_id, category, title, amount, day, at, n, ratio, meta) VALUES ('${colleague.id}', 'secret', 'x', 1, '2020-01-01', '2020-01-01', 7, 0.5, '{"k": 1}')`,
  );
  await h.sqlOk(
    owner.token,
    ws.id,
    `INSERT INTO ledger (owner_id, category, title, amount, day, at, n, ratio, meta) VALUES ('${member.id}', 'a', 'mine-1', 1, '2020-01-02', '2020-01-02', 1, 1, '{"k": 2}'), ('${member.id}', 'b', 'mine-2', 2, '2020-01-03', '2020-01-03', 2, 2, '[1]')`,
  );
  // A select filter PostgreSQL thinks costlier than any one copy: an $in list OR-ed with two more allow policies.
  const g = await h.group(owner.token, ws.id, { name: 'member', user_ids: [member.id] });
  await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'ledger', operation: 'select', condition: { category: { $in: ['a', 'b', 'c', 'd', 'e'] } } });
  await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'ledger', operation: 'select', name: 'p2', condition: { owner_id: '$user_id', n: { $lt: 0 } } });
  await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'ledger', operation: 'select', name: 'p3', condition: { title: 'never' } });
  for (const operation of ['update', 'delete']) await h.policy(owner.token, ws.id, { policy_group_id: g, table_name: 'ledger', operation, condition: { owner_id: '$user_id' } });
  // The member writes STFs too (their sql() reads with the member's policies).
  const editors = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { workflow_editor_policy_group_id: g } });
  expect(editors.status, short(editors.body)).toBe(200);
});

afterAll(async () => {
  await h?.close();
});

/** Predicates whose evaluation on a row may fail or may not, each alone and behind a cheap prefix test on the title. */
const FAILING = [
  "amount = '1'::float8",
  "amount > '0'::float4",
  "amount IN ('1'::float8, 2)",
  "day = '2020-01-01'::timestamp",
  "day < '2020-01-01'::timestamptz",
  "at = '2020-01-01'::timestamptz",
  "'1'::float8 = amount",
  "ratio = '1'::numeric",
  "n = '1'::float8",
  'amount = 1.5',
  "meta IS NOT NULL AND amount = '1'::float8",
];
const PREFIXES = ["title < 'A_HIDDEN_4'", "title < 'A_HIDDEN_5'", "title >= 'A'", "title = 'x'"];
const PROBES = [...FAILING, ...FAILING.flatMap((f) => PREFIXES.map((p) => `${p} AND ${f}`))];

const statements = (where: string) => [
  `SELECT title FROM ledger WHERE ${where} ORDER BY title`,
  `SELECT count(*) AS n FROM ledger l WHERE ${where.replace(/\b(title|amount|day|at|ratio|n|meta)\b/g, 'l.$1')}`,
  `UPDATE ledger SET n = n WHERE ${where}`,
  `DELETE FROM ledger WHERE ${where} AND n < 0`,
  `SELECT o.title FROM ledger o JOIN ledger p ON p.title = o.title WHERE ${where.replace(/\b(title|amount|day|at|ratio|n|meta)\b/g, 'p.$1')}`,
];

/** What an answer says, without what changes from one request to the next (ids, timings, the executed SQL). */
function outcome(r: Res): string {
  const body = r.body ?? {};
  const { rows, row_count, affected_rows, code, error, details } = body;
  return JSON.stringify({ status: r.status, rows, row_count, affected_rows, code, error, details });
}

async function answers(statementsToSend: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const sql of statementsToSend) out.push(outcome(await h.sql(member.token, ws.id, sql)));
  return out;
}

function noHiddenValues(label: string, text: string) {
  for (const v of [HIDDEN.title, '1e400', '1e+400', '5874897', '294276', 'secret']) {
    expect(text.includes(v), `${label} quotes a hidden value ${v}: ${short(text)}`).toBe(false);
  }
}

describe('copied predicates never run on hidden rows (finding 3)', () => {
  test('through /sql: reads, UPDATE, DELETE and joins answer the same whatever the hidden row holds', async () => {
    const sent = PROBES.flatMap(statements);
    await hide(HIDDEN);
    const withCanary = await answers(sent);
    await hide(HARMLESS);
    const withoutCanary = await answers(sent);
    const differing = sent.flatMap((s, i) => (withCanary[i] === withoutCanary[i] ? [] : [`${s}\n  ${withCanary[i]}\n  ${withoutCanary[i]}`]));
    expect(differing, differing.slice(0, 5).join('\n')).toEqual([]);
    for (const [i, a] of withCanary.entries()) {
      noHiddenValues(sent[i] as string, a);
      expect(JSON.parse(a).status, `${sent[i]}: ${a}`).toBeLessThan(500);
    }
    // The member's own rows are still found where the predicates hold for them.
    expect(JSON.parse(withCanary[sent.indexOf("SELECT title FROM ledger WHERE title >= 'A' AND amount = 1.5 ORDER BY title")] as string).rows).toEqual([]);
    const own = await h.sqlOk(member.token, ws.id, "SELECT title FROM ledger WHERE amount = 2 AND title >= 'A' ORDER BY title");
    expect(own.rows).toEqual([{ title: 'mine-2' }]);
  });

  test('the byte-by-byte oracle: a prefix test on a hidden title answers alike for every guess', async () => {
    await hide(HIDDEN);
    const guesses = ['A_HIDDEN_3', 'A_HIDDEN_4', 'A_HIDDEN_4f', 'A_HIDDEN_5', 'B'];
    const seen = new Set<string>();
    for (const g of guesses) {
      for (const sql of [`SELECT title FROM ledger WHERE title < '${g}' AND amount = '1'::float8`, `UPDATE ledger SET n = n WHERE title < '${g}' AND day = '2020-01-01'::timestamp`]) {
        const r = await h.sql(member.token, ws.id, sql);
        expect(r.status, short(r.body)).toBeLessThan(500);
        seen.add(`${sql.slice(0, 6)} ${outcome(r)}`);
      }
    }
    expect(seen.size, [...seen].join('\n')).toBe(2);
  });

  test("through STF sql(): the same answers as the member's own statements", async () => {
    const probes = PROBES.filter((_, i) => i % 3 === 0).map((w) => `SELECT title FROM ledger WHERE ${w} ORDER BY title`);
    const code = `const out = []; for (const q of ${JSON.stringify(probes)}) { try { out.push(JSON.stringify(sql(q))); } catch (e) { out.push('error: ' + e.message); } } return out;`;
    const stf = await h.call('POST', '/api/v1/stfs', {
      token: member.token,
      workspace: ws.id,
      body: { name: 'probe', version: '1', runtime: 'javascript', code: Buffer.from(code).toString('base64') },
    });
    expect(stf.status, short(stf.body)).toBe(201);
    const run = async () => {
      const r = await h.call('POST', '/api/v1/stfs/instant-run', { token: member.token, workspace: ws.id, body: { stf_id: stf.body.id } });
      expect(r.status, short(r.body)).toBe(200);
      return r.body.output as string[];
    };
    await hide(HIDDEN);
    const a = await run();
    await hide(HARMLESS);
    const b = await run();
    expect(a).toEqual(b);
    noHiddenValues('sql()', JSON.stringify(a));
  });

  test('through MCP execute_sql', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${member.token}`, 'x-workspace-id': ws.id } },
    });
    const client = new Client({ name: 'wds-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const probes = PROBES.filter((_, i) => i % 4 === 1).flatMap((w) => [`SELECT title FROM ledger WHERE ${w} ORDER BY title`, `UPDATE ledger SET n = n WHERE ${w}`]);
      const run = async () => {
        const out: string[] = [];
        for (const sql of probes) {
          const r = (await client.callTool({ name: 'execute_sql', arguments: { sql } })) as { isError?: boolean; structuredContent?: any };
          const { rows, affected_rows, code, error } = r.structuredContent ?? {};
          out.push(JSON.stringify({ isError: !!r.isError, rows, affected_rows, code, error }));
        }
        return out;
      };
      await hide(HIDDEN);
      const a = await run();
      await hide(HARMLESS);
      const b = await run();
      expect(a).toEqual(b);
      noHiddenValues('mcp', JSON.stringify(a));
    } finally {
      await client.close();
    }
  });
});
