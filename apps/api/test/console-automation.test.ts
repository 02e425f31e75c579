import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, HOSTILE, a11yViolations, fitsWidth, heading, openConsole, shot, signedIn } from './console-support.js';
import type { Harness } from './support.js';

/**
 * The console's automation pages in a real browser (docs/console.md): Approvals (an agent's write waits in the
 * inbox, arrives there live, is approved with a comment and runs once; another is rejected and never runs),
 * Workflows and runs (a two-step workflow executed from the console, its run's timeline, a re-run), STFs and effects
 * (an STF edited in the code editor and saved as a new version, instant-run with its output and logs, a secret whose
 * value never reaches the page). Hostile values in proposals, comments, run outputs and logs render as text.
 */
let c: ConsoleHarness;
let h: Harness;
type User = Awaited<ReturnType<Harness['user']>>;
let owner: User;
let agent: User;
let ws: { id: string; name: string };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const at = (section: string, ...rest: string[]) => ['/console/w', ws.id, section, ...rest].join('/');
const hostileText = `${HOSTILE.img} ${HOSTILE.script} ${HOSTILE.link} ${HOSTILE.rtl} ${HOSTILE.long}`;

beforeAll(async () => {
  c = await openConsole();
  h = c.h;
  owner = await h.user('owner');
  agent = await h.user('agent');
  ws = await h.workspace(owner.token, 'Automation');
  await h.addMember(owner.token, ws.id, agent.email);
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE notes (id serial PRIMARY KEY, body text)');
  await h.allowAll(owner.token, ws.id, [owner.id, agent.id], ['notes']);
}, 600_000);
afterAll(async () => {
  await c?.close();
});

/** What every page must end with: nothing went wrong on it, axe finds nothing serious, nothing widens it. */
async function clean(page: Page, problems: string[], name: string) {
  await shot(page, name);
  expect(await a11yViolations(page)).toEqual([]);
  expect(await fitsWidth(page)).toBe(true);
  expect(problems).toEqual([]);
}

const notes = async () => (await h.sqlOk(owner.token, ws.id, 'SELECT body FROM notes ORDER BY id')).rows.map((r: any) => r.body as string);

describe('the console: approvals, workflows, STFs', () => {
  it("an agent's write arrives in the open inbox live, is approved with a comment and runs once; another, over MCP, is rejected and never runs", async () => {
    const settings = await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { sql_approval_mode: 'write_only', sql_approval_applies_to: 'agents' } });
    expect(settings.status).toBe(200);
    const key = await h.call('POST', '/api/v1/api-keys', { token: agent.token, body: { name: `deploy bot ${HOSTILE.img}` } });
    expect(key.status).toBe(201);
    const { page, problems } = await signedIn(c, owner.token, at('approvals'));
    await heading(page, 'Approvals');
    await page.getByText('Nothing waits for approval.').waitFor();
    await page.getByText('Live: new proposals appear here').waitFor();

    // The agent writes; nothing runs, and the proposal appears in the inbox without a reload.
    const insert = `INSERT INTO notes (body) VALUES ('${hostileText}')`;
    const held = await h.call('POST', `/api/v1/workspaces/${ws.id}/sql`, { token: key.body.key, body: { sql: insert } });
    expect(held.status).toBe(202);
    expect(held.body.code).toBe('APPROVAL_REQUIRED');
    const row = page.getByRole('row').filter({ hasText: "INSERT INTO notes (body) VALUES ('<img" });
    await row.waitFor();
    await expect.poll(() => row.getByText(`API key “deploy bot ${HOSTILE.img}”, over HTTP`).count()).toBe(1);
    expect(await page.getByRole('status').filter({ hasText: 'A new proposal arrived: insert on notes.' }).count()).toBe(1);
    await clean(page, problems, 'console-approvals-inbox');
    expect(await notes()).toEqual([]);

    await row.getByRole('link', { name: 'Review the insert' }).click();
    await heading(page, 'Proposal: insert on notes');
    await page.getByText('As the rewriter runs it').waitFor();
    expect(await page.locator('pre.code').first().textContent()).toBe(insert);
    const comment = `fine by me ${HOSTILE.img} ${HOSTILE.script}`;
    await page.getByLabel('Comment').fill(comment);
    await page.getByRole('button', { name: 'Approve and run' }).click();
    await page.getByRole('status').filter({ hasText: 'Approved: the statement ran once, 1 row affected.' }).waitFor();
    await expect.poll(() => page.getByText(comment, { exact: true }).count()).toBe(1);
    await clean(page, problems, 'console-approvals-approved');
    expect(await notes()).toEqual([hostileText]);
    const approved = await h.call('GET', `/api/v1/workspaces/${ws.id}/sql/proposals/${held.body.proposal.id}`, { token: owner.token });
    expect(approved.body).toMatchObject({ status: 'executed', affected_rows: 1, decided_by: owner.id, decision_comment: comment });

    // A second one, rejected with a comment: it never runs.
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    await page.getByText('Nothing waits for approval.').waitFor();
    await page.getByText('Live: new proposals appear here').waitFor();
    // This one comes over MCP (a model's tool call with the same key): the inbox says so.
    const mcp = new Client({ name: 'console-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${c.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key.body.key}`, 'x-workspace-id': ws.id } } }));
    const called = (await mcp.callTool({ name: 'propose_sql', arguments: { id: ws.id, sql: 'DELETE FROM notes' } })) as any;
    await mcp.close();
    const del = { body: { proposal: called.structuredContent ?? JSON.parse(called.content[0].text) } };
    expect(del.body.proposal.credential).toMatchObject({ kind: 'api_key', via_mcp: true });
    const second = page.getByRole('row').filter({ hasText: 'DELETE FROM notes' });
    await expect.poll(() => second.getByText(`API key “deploy bot ${HOSTILE.img}”, over MCP`).count()).toBe(1);
    await second.getByRole('link', { name: 'Review the delete' }).click();
    await heading(page, 'Proposal: delete on notes');
    await page.getByLabel('Comment').fill(`no ${HOSTILE.link}`);
    await page.getByRole('button', { name: 'Reject' }).click();
    await page.getByRole('status').filter({ hasText: 'Rejected: the statement did not run.' }).waitFor();
    expect(await notes()).toEqual([hostileText]);
    const rejected = await h.call('GET', `/api/v1/workspaces/${ws.id}/sql/proposals/${del.body.proposal.id}`, { token: owner.token });
    expect(rejected.body).toMatchObject({ status: 'rejected', decision_comment: `no ${HOSTILE.link}`, affected_rows: null });

    // Both are in the history; the status filter is the list's.
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    const history = page.getByRole('table', { name: 'Decided proposals, newest first' });
    await expect.poll(() => history.getByRole('row').count()).toBe(3);
    await page.getByLabel('Status').selectOption('rejected');
    await expect.poll(() => history.getByRole('row').count()).toBe(2);
    expect(await history.getByText('DELETE FROM notes').count()).toBe(1);
    await clean(page, problems, 'console-approvals-history');
    await page.close();
  });

  it("a two-step workflow executed from the console shows its run's timeline, step by step; a re-run makes a new run", async () => {
    const stf = async (name: string, code: string) => {
      const r = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name, version: '1', runtime: 'javascript', code: b64(code) } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.version.id as string;
    };
    const one = await stf('double', "console.log('doubling'); return { n: $input.n * 2 };");
    const two = await stf('decorate', `return { total: $input.n + 1, html: ${JSON.stringify(hostileText)} };`);
    const wf = await h.call('POST', '/api/v1/workflows', {
      token: owner.token,
      workspace: ws.id,
      body: { name: `pricing ${HOSTILE.img}`, stf_steps: [{ stf_version_id: one, input_mappings: [] }, { stf_version_id: two, input_mappings: [] }] },
    });
    expect(wf.status, JSON.stringify(wf.body)).toBe(201);

    const { page, problems, requests } = await signedIn(c, owner.token, at('workflows'));
    await heading(page, 'Workflows and runs');
    // A definition from JSON: the console creates it and opens it.
    await page.getByText('New workflow from JSON').click();
    await page.getByLabel('Definition (JSON').fill(JSON.stringify({ name: 'from json', stf_steps: [{ stf_version_id: one, input_mappings: [] }] }));
    await page.getByRole('button', { name: 'Create the workflow' }).click();
    await heading(page, 'Workflow: from json');
    const listed = await h.call('GET', '/api/v1/workflows?name=from%20json', { token: owner.token, workspace: ws.id });
    expect(listed.body.map((w: any) => w.stf_steps.length)).toEqual([1]);
    await page.getByRole('link', { name: 'All workflows' }).click();
    await page.getByRole('link', { name: `pricing ${HOSTILE.img}` }).click();
    await heading(page, `Workflow: pricing ${HOSTILE.img}`);
    await expect.poll(() => page.getByRole('cell', { name: 'STF double, version 1' }).count()).toBe(1);

    // Invalid JSON is said before anything is sent.
    await page.getByLabel('Input (JSON').fill('{"n": 20');
    await page.getByRole('button', { name: 'Execute' }).click();
    await page.getByRole('alert').filter({ hasText: 'The input is not valid JSON' }).waitFor();
    expect(requests.some((u) => u.includes('/execute'))).toBe(false);

    await page.getByLabel('Input (JSON').fill('{"n": 20}');
    await page.getByRole('button', { name: 'Execute' }).click();
    const done = page.getByRole('status').filter({ hasText: 'Succeeded:' });
    await done.waitFor();
    expect(await done.locator('pre.json').textContent()).toContain('"total": 41');
    await expect.poll(() => page.getByRole('table', { name: 'Runs, newest first' }).getByRole('row').count()).toBe(2);
    await clean(page, problems, 'console-workflows-executed');

    await done.getByRole('link', { name: /^run / }).click();
    await expect.poll(() => page.getByRole('heading', { name: /^Run [0-9a-f-]{36}$/ }).count()).toBe(1);
    const first = page.url().split('/').pop() as string;
    const timeline = page.getByRole('table', { name: 'Steps of the run, in order' });
    await expect.poll(() => timeline.getByRole('rowheader').allTextContents()).toEqual(['STF step 0: double, version 1', 'STF step 1: decorate, version 1']);
    for (const r of await timeline.getByRole('row').all().then((rows) => rows.slice(1))) {
      expect(await r.getByRole('cell').nth(0).textContent()).toBe('succeeded');
      expect(await r.getByRole('cell').nth(1).textContent()).toMatch(/^\d+ ms$|^[\d.]+ s$/);
    }
    await page.getByText('Input and output of STF step 1: decorate, version 1').click();
    await expect.poll(() => page.getByText(HOSTILE.long, { exact: false }).count()).toBeGreaterThan(0);
    await clean(page, problems, 'console-workflows-run');

    await page.getByRole('button', { name: 'Re-run with the same input' }).click();
    await expect.poll(() => page.url().split('/').pop()).not.toBe(first);
    const second = page.url().split('/').pop() as string;
    await heading(page, `Run ${second}`);
    await expect.poll(() => page.getByRole('link', { name: `Run ${first}` }).count()).toBe(1);
    const runs = await h.call('GET', `/api/v1/workflows/${wf.body.id}/runs`, { token: owner.token, workspace: ws.id });
    expect(runs.body.map((r: any) => [r.id, r.status, r.rerun_of])).toEqual([
      [second, 'succeeded', first],
      [first, 'succeeded', null],
    ]);
    await clean(page, problems, 'console-workflows-rerun');
    await page.close();
  });

  it('a run queued in the background is followed to its end; a schedule, a webhook (its secret shown once) and a trigger are made, paused and deleted', async () => {
    const v = await h.call('POST', '/api/v1/stfs', { token: owner.token, workspace: ws.id, body: { name: 'echo', version: '1', runtime: 'javascript', code: b64('return { seen: $input.n };') } });
    expect(v.status, JSON.stringify(v.body)).toBe(201);
    const wf = await h.call('POST', '/api/v1/workflows', { token: owner.token, workspace: ws.id, body: { name: 'nightly', stf_steps: [{ stf_version_id: v.body.version.id, input_mappings: [] }] } });
    expect(wf.status, JSON.stringify(wf.body)).toBe(201);
    const { page, problems, settled } = await signedIn(c, owner.token, at('workflows', wf.body.id));
    await heading(page, 'Workflow: nightly');

    // In the background: the answer is at once (202), and the run's page follows the run until it has ended.
    await page.getByLabel('Input (JSON').fill('{"n": 7}');
    await page.getByLabel('Run in the background').check();
    await page.getByRole('button', { name: 'Execute' }).click();
    const queued = page.getByRole('status').filter({ hasText: 'Queued as ' });
    await queued.waitFor();
    await queued.getByRole('link', { name: /^run / }).click();
    await expect.poll(() => page.getByRole('heading', { name: /^Run [0-9a-f-]{36}$/ }).count()).toBe(1);
    const runId = page.url().split('/').pop() as string;
    await page.getByText('succeeded', { exact: true }).first().waitFor();
    const run = await h.call('GET', `/api/v1/workflows/${wf.body.id}/runs/${runId}`, { token: owner.token, workspace: ws.id });
    expect([run.body.status, run.body.trigger, run.body.output]).toEqual(['succeeded', 'async', { seen: 7 }]);
    // Its requests end before the page is left (leaving mid-request would cut one short, a failed request).
    await settled();
    await page.goBack();
    await heading(page, 'Workflow: nightly');

    // A schedule, made and paused from the page.
    await page.getByText('New schedule').click();
    await page.getByLabel('Cron expression').fill('0 3 * * *');
    await page.getByLabel("Schedule's name").fill(`nightly ${HOSTILE.img}`);
    await page.getByRole('button', { name: 'Create the schedule' }).click();
    const schedules = page.getByRole('table', { name: 'Schedules of this workflow' });
    await schedules.getByRole('cell', { name: `nightly ${HOSTILE.img}`, exact: true }).waitFor();
    await schedules.getByRole('button', { name: `Pause nightly ${HOSTILE.img}` }).click();
    await schedules.getByRole('button', { name: `Resume nightly ${HOSTILE.img}` }).waitFor();
    const listedSchedules = await h.call('GET', `/api/v1/workflows/${wf.body.id}/schedules`, { token: owner.token, workspace: ws.id });
    expect(listedSchedules.body.map((x: any) => [x.name, x.cron, x.paused])).toEqual([[`nightly ${HOSTILE.img}`, '0 3 * * *', true]]);

    // A webhook: its signing secret is shown this once, and is what the service holds for it.
    await page.getByLabel("New webhook's name").fill('from github');
    await page.getByRole('button', { name: 'Create the webhook' }).click();
    const notice = page.getByRole('status').filter({ hasText: 'The signing secret of from github, shown this once' });
    await notice.waitFor();
    const secret = (await notice.locator('pre.code').textContent()) as string;
    expect(secret.length).toBeGreaterThanOrEqual(32);
    await notice.getByRole('button', { name: 'I have kept it' }).click();
    await expect.poll(() => page.getByText(secret).count()).toBe(0);
    const hooks = page.getByRole('table', { name: 'Webhooks of this workflow' });
    await hooks.getByRole('button', { name: 'Pause from github' }).click();
    await hooks.getByRole('button', { name: 'Resume from github' }).waitFor();

    // A trigger on a table's inserts, then deleted.
    await page.getByText('New trigger').click();
    await page.getByLabel('Event').selectOption('row_inserted');
    await page.getByLabel('Table').fill('notes');
    await page.getByLabel("Trigger's name").fill('on a note');
    await page.getByRole('button', { name: 'Create the trigger' }).click();
    const triggers = page.getByRole('table', { name: 'Triggers of this workflow' });
    await triggers.getByRole('cell', { name: 'on a note', exact: true }).waitFor();
    const listedTriggers = await h.call('GET', `/api/v1/workflows/${wf.body.id}/triggers`, { token: owner.token, workspace: ws.id });
    expect(listedTriggers.body.map((x: any) => [x.name, x.event, x.table_name])).toEqual([['on a note', 'row_inserted', 'notes']]);
    await clean(page, problems, 'console-workflows-automation');
    await triggers.getByRole('button', { name: 'Delete on a note' }).click();
    await expect.poll(() => triggers.getByRole('cell', { name: 'on a note', exact: true }).count()).toBe(0);
    expect((await h.call('GET', `/api/v1/workflows/${wf.body.id}/triggers`, { token: owner.token, workspace: ws.id })).body).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('an STF edited in the editor and saved is a new version; instant-run shows its output, logs and time; a secret value never reaches the page', async () => {
    const created = await h.call('POST', '/api/v1/stfs', {
      token: owner.token,
      workspace: ws.id,
      body: { name: 'greeter', version: '1', runtime: 'javascript', code: b64('/* version 1 */') },
    });
    expect(created.status).toBe(201);
    const effect = await h.call('POST', '/api/v1/effects', {
      token: owner.token,
      workspace: ws.id,
      body: {
        name: 'notify shop',
        version: '1.0',
        url: 'https://hooks.example.com/orders',
        method: 'POST',
        header_mappings: [{ source: { type: 'Const', value: 'application/json' }, target: 'Accept' }],
        body_mappings: [{ source: { type: 'Variable', value: '$.order.id' }, target: 'id' }],
        retries: 2,
      },
    });
    expect(effect.status, JSON.stringify(effect.body)).toBe(201);
    const secret = 'canary-s3cr3t-value-0042';

    const { page, problems } = await signedIn(c, owner.token, at('stfs'));
    await heading(page, 'STFs and effects');
    await page.getByRole('link', { name: 'greeter' }).click();
    await heading(page, 'STF: greeter');

    await page.getByLabel('Secret name').fill('API_TOKEN');
    await page.getByLabel('Value').fill(secret);
    await page.getByRole('button', { name: 'Set the secret' }).click();
    await page.getByRole('status').filter({ hasText: 'Set API_TOKEN.' }).waitFor();
    await expect.poll(() => page.getByRole('cell', { name: 'API_TOKEN', exact: true }).count()).toBe(1);
    expect(await page.getByLabel('Value').inputValue()).toBe('');

    // The new version logs and returns what its input carries: the hostile text reaches the logs and the output
    // through the instant run's input.
    const code = " console.log('token is', $env.API_TOKEN); console.log($input.text); return { doubled: $input.n * 2, html: $input.text };";
    const editor = page.locator('.cm-content');
    await editor.waitFor();
    await editor.click();
    // Typed at the end: chromium's native editing of Input.insertText over a selection writes an element with an
    // inline style into the editable (a CSP report); a person's keys and pastes go through CodeMirror's handlers.
    await page.keyboard.press('Control+End');
    await page.keyboard.insertText(code);
    expect(await page.getByLabel("New version's label").inputValue()).toBe('2');
    await page.getByRole('button', { name: 'Save as a new version' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 2.' }).waitFor();
    await expect.poll(() => page.getByRole('table', { name: /^Versions, newest first/ }).getByRole('row').count()).toBe(3);
    const versions = await h.call('GET', `/api/v1/stfs/${created.body.id}/versions`, { token: owner.token, workspace: ws.id });
    expect(versions.body.map((v: any) => v.version)).toEqual(['2', '1']);
    expect(Buffer.from(versions.body[0].code, 'base64').toString()).toBe(`/* version 1 */${code}`);

    await page.getByLabel('Input (JSON').fill(JSON.stringify({ n: 21, text: hostileText }));
    await page.getByRole('button', { name: 'Run the newest saved version' }).click();
    const answer = page.locator('.run-answer');
    await answer.getByText('Ran version 2:').waitFor();
    expect(await answer.locator('pre.json').textContent()).toContain('"doubled": 42');
    expect(await answer.textContent()).toMatch(/succeeded in \d+ ms/);
    const logs = await answer.getByRole('listitem').allTextContents();
    expect(logs).toEqual(['log token is ***', `log ${hostileText}`]);
    expect(await page.content()).not.toContain(secret);
    await clean(page, problems, 'console-stfs-run');

    await page.getByRole('link', { name: 'View version 1' }).click();
    await heading(page, 'greeter, version 1');
    expect(await page.locator('pre.code').textContent()).toBe('/* version 1 */');
    await page.getByRole('link', { name: 'Back to the STF greeter' }).click();
    await heading(page, 'STF: greeter');
    await page.getByRole('link', { name: 'All STFs and effects' }).click();
    await page.getByRole('link', { name: 'notify shop' }).click();
    await heading(page, 'Effect: notify shop');
    await page.getByText('POST https://hooks.example.com/orders').waitFor();
    expect(await page.getByRole('table', { name: 'Headers of version 1.0' }).getByRole('cell', { name: '"application/json"' }).count()).toBe(1);
    expect(await page.content()).not.toContain(secret);
    await clean(page, problems, 'console-stfs-effect');
    await page.close();
  });
});
