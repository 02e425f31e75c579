import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, HOSTILE, a11yViolations, fitsWidth, heading, openConsole, shot, signedIn } from './console-support.js';

/**
 * The console's SQL editor and dashboard (docs/console.md) in a real browser: a member sees only their rows and the
 * statement as it ran, errors with code and details, completion of columns; an admin explains the policies, views as
 * the member, explains one row, and pins charts that the dashboard draws for each viewer under their own policies.
 * Table values and a quoted column name are hostile text: they must stay text (a dialog or CSP report fails).
 */
let c: ConsoleHarness;
let owner: { id: string; email: string; token: string };
let member: { id: string; email: string; token: string };
let ws: { id: string };

const HOSTILE_COLUMN = '<img src=x onerror=alert(9)>';
const q = (s: string) => `'${s.replaceAll("'", "''")}'`;
const BAR_SQL = `SELECT title AS "${HOSTILE_COLUMN}", n FROM items ORDER BY n`;
const MEMBER_TITLES = [HOSTILE.img, HOSTILE.script, HOSTILE.link, HOSTILE.rtl, HOSTILE.long];

beforeAll(async () => {
  c = await openConsole();
  const { h } = c;
  owner = await h.user('owner');
  member = await h.user('member');
  ws = await h.workspace(owner.token, 'Charts');
  await h.addMember(owner.token, ws.id, member.email);
  await h.sqlOk(owner.token, ws.id, 'CREATE TABLE items (id int PRIMARY KEY, owner_id uuid, title text, n int)');
  await h.allowAll(owner.token, ws.id, [owner.id], ['items']);
  const mine = await h.group(owner.token, ws.id, { name: 'members', user_ids: [member.id] });
  await h.policy(owner.token, ws.id, { name: 'own rows', policy_group_id: mine, table_name: 'items', operation: 'select', condition: { owner_id: '$user_id' } });
  const values = [
    ...MEMBER_TITLES.map((t, i) => `(${i + 1}, '${member.id}', ${q(t)}, ${i + 1})`),
    ...['owner-a', 'owner-b', 'owner-c'].map((t, i) => `(${i + 10}, '${owner.id}', ${q(t)}, ${(i + 1) * 10})`),
  ];
  await h.sqlOk(owner.token, ws.id, `INSERT INTO items VALUES ${values.join(', ')}`);
}, 600_000);
afterAll(async () => {
  await c?.close();
});

/** The SQL editor once CodeMirror has replaced the stand-in text area. */
async function editor(page: Page) {
  await heading(page, 'SQL editor');
  await expect.poll(() => page.locator('.cm-editor').count(), { timeout: 15_000 }).toBe(1);
  return page.getByRole('textbox', { name: 'SQL statement' });
}

/** Replaces the editor's text (it has the focus). */
async function write(page: Page, sql: string) {
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(sql);
}

const editorText = (page: Page) => page.locator('.cm-content').textContent();
/** A failed answer the page expects and explains (chromium logs a 4xx fetch as a console error). */
const unexpected = (problems: string[], status: number) => problems.filter((p) => !p.includes(`status of ${status}`));

describe('the SQL editor', () => {
  it('a member runs a SELECT with Ctrl+Enter and sees only their rows, inert, with the SQL as run; an error shows its code and details; completion and history', async () => {
    const { page, problems } = await signedIn(c, member.token, `/console/w/${ws.id}/sql`);
    await (await editor(page)).click();
    await write(page, 'SELECT id, title, n FROM items ORDER BY n');
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByText('5 rows.').count()).toBe(1);
    for (const t of MEMBER_TITLES) expect(await page.getByRole('cell', { name: t, exact: true }).count()).toBe(1);
    expect(await page.getByRole('cell', { name: 'owner-a' }).count()).toBe(0);
    // The statement as it ran: the physical table and the member's policy predicate.
    const executed = await page.locator('#executed-sql').textContent();
    expect(executed).toContain(`user_data.ws_`);
    expect(executed).toContain(`owner_id = '${member.id}'`);
    expect(await fitsWidth(page)).toBe(true);
    await shot(page, 'console-sql-member');

    // A failing statement: its code and details next to it.
    await page.getByRole('textbox', { name: 'SQL statement' }).click();
    await write(page, 'SELECT nope FROM items');
    await page.keyboard.press('Control+Enter');
    const alert = page.getByRole('alert', { name: 'Error of the statement' });
    await expect.poll(() => alert.count()).toBe(1);
    expect(await alert.textContent()).toContain('EXECUTION_ERROR');
    expect(await alert.locator('.details').textContent()).toContain('42703');
    await shot(page, 'console-sql-error');

    // Completion offers a column of the table.
    await page.getByRole('textbox', { name: 'SQL statement' }).click();
    await page.keyboard.press('Escape');
    await write(page, 'SELECT items.');
    await expect.poll(() => page.getByRole('option', { name: 'title' }).count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await page.keyboard.press('Escape');

    // The session's history: newest first; a click loads a statement back.
    const items = page.getByRole('button', { name: /^Load into the editor: / });
    await expect.poll(() => items.count()).toBe(2);
    await page.getByRole('button', { name: 'Load into the editor: SELECT id, title, n FROM items ORDER BY n' }).click();
    await expect.poll(() => editorText(page)).toBe('SELECT id, title, n FROM items ORDER BY n');
    expect(await a11yViolations(page)).toEqual([]);
    expect(unexpected(problems, 400)).toEqual([]);
    await page.close();
  });

  it('keyboard only: run, read the result, open the explain panel and explain a row', async () => {
    const { page, problems } = await signedIn(c, member.token, `/console/w/${ws.id}/sql`);
    await editor(page);
    const inEditor = () => page.evaluate("document.activeElement?.shadowRoot?.activeElement?.getAttribute('aria-label') === 'SQL statement'");
    for (let i = 0; i < 40 && !(await inEditor()); i++) await page.keyboard.press('Tab');
    expect(await inEditor()).toBe(true);
    await write(page, 'SELECT id, title FROM items ORDER BY n');
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByText('5 rows.').count()).toBe(1);
    // Escape, then Tab leaves the editor (CodeMirror's rule): to Run, then Explain.
    // (The first Escape may close a completion list.)
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    const focused = () => page.evaluate("document.activeElement?.textContent ?? ''") as Promise<string>;
    expect(await focused()).toBe('Run');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Explain');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('heading', { name: 'Explain', exact: true }).count()).toBe(1);
    await expect.poll(() => page.getByRole('heading', { name: /items, select: allowed/ }).count()).toBe(1);
    // On through the panel and the result to the first row's explain button.
    for (let i = 0; i < 30 && (await focused()) !== 'Explain row 1'; i++) await page.keyboard.press('Tab');
    expect(await focused()).toBe('Explain row 1');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByText('Visible: you may read this row of items.').count()).toBe(1);
    await shot(page, 'console-sql-keyboard');
    expect(await a11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('an admin explains the policies, views as the member, explains a row for them, meets an approval, and pins a chart', async () => {
    const { h } = c;
    const { page, problems } = await signedIn(c, owner.token, `/console/w/${ws.id}/sql`);
    await (await editor(page)).click();
    await write(page, 'SELECT id, title, n FROM items ORDER BY n');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await expect.poll(() => page.getByText('8 rows.').count()).toBe(1);

    await page.getByRole('button', { name: 'Explain', exact: true }).click();
    await expect.poll(() => page.getByRole('heading', { name: /items, select: allowed/ }).count()).toBe(1);
    await page.getByLabel('View as member').selectOption(member.id);
    await expect.poll(() => page.getByText('Explained for member').count()).toBe(1);
    const ownRows = page.getByRole('table', { name: 'Policies that applied to items (select)' });
    expect(await ownRows.getByRole('cell', { name: 'own rows' }).count()).toBe(1);
    expect(await page.locator('.access code.sql').textContent()).toBe(`owner_id = '${member.id}'`);
    expect(await page.getByText('a row is shown only when both of you may read it').count()).toBe(1);

    // A row of the admin's own result that the member may not read: which condition fails for them.
    await page.getByRole('button', { name: 'Explain row 6' }).click();
    await expect.poll(() => page.getByText(/^Hidden: member <.*> may not read this row of items\.$/).count()).toBe(1);
    expect(await page.getByText('{"owner_id":"$user_id"}: does not match').count()).toBe(1);
    await page.getByRole('button', { name: 'Explain row 1' }).click();
    await expect.poll(() => page.getByText(/^Visible: member <.*> may read this row of items\.$/).count()).toBe(1);
    expect(await page.getByText('{"owner_id":"$user_id"}: matches').count()).toBe(1);
    await shot(page, 'console-sql-explain');

    // Run as the member: the rows both may read.
    await page.getByRole('button', { name: /^Run as member/ }).first().click();
    await expect.poll(() => page.getByText('5 rows that you and member may both read.').count()).toBe(1);
    expect(await page.getByRole('cell', { name: 'owner-a' }).count()).toBe(0);
    await page.getByLabel('View as member').selectOption('');

    // A write that needs approval says so and links to the inbox.
    await h.call('PATCH', `/api/v1/workspaces/${ws.id}`, { token: owner.token, body: { sql_approval_mode: 'write_only', sql_approval_applies_to: 'everyone' } });
    await page.getByRole('textbox', { name: 'SQL statement' }).click();
    await write(page, `UPDATE items SET n = 99 WHERE id = 10`);
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.getByText('This statement waits for approval; nothing ran.').count()).toBe(1);
    expect(await page.getByRole('link', { name: 'See it on the Approvals page' }).getAttribute('href')).toBe(`/console/w/${ws.id}/approvals`);
    expect((await h.sqlOk(owner.token, ws.id, 'SELECT n FROM items WHERE id = 10')).rows[0].n).toBe(10);

    // Pin a query (a hostile quoted column name as its x axis) as a bar chart.
    await page.getByRole('textbox', { name: 'SQL statement' }).click();
    await write(page, BAR_SQL);
    await page.keyboard.press('Control+Enter');
    await page.keyboard.press('Escape'); // the completion list, if open
    await expect.poll(() => page.getByRole('columnheader', { name: HOSTILE_COLUMN }).count()).toBe(1);
    await page.getByRole('button', { name: 'Pin as chart' }).click();
    await page.getByLabel('Chart title').fill(`Bars ${HOSTILE.img}`);
    await page.getByLabel('Chart type').selectOption('bar');
    await page.getByLabel('X axis column').selectOption(HOSTILE_COLUMN);
    await page.getByRole('button', { name: 'Pin to the dashboard' }).click();
    await expect.poll(() => page.getByText(`Pinned "Bars ${HOSTILE.img}".`).count()).toBe(1);
    await shot(page, 'console-sql-pin');
    const charts = await h.call('GET', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id });
    expect(charts.body).toHaveLength(1);
    expect(charts.body[0]).toMatchObject({ chart_type: 'bar', x_axis_column: HOSTILE_COLUMN, y_axis_columns: ['n'], sql_query: BAR_SQL });
    expect(await fitsWidth(page)).toBe(true);
    expect(await a11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe('the dashboard', () => {
  it('draws bar, line, pie and number charts for each viewer under their own policies, honours the flag, unpins', async () => {
    const { h } = c;
    const pin = async (body: Record<string, unknown>) => {
      const r = await h.call('POST', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id, body });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.id as string;
    };
    // Pinned through the SQL editor above; through the API when this test runs alone.
    const pinned = await h.call('GET', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id });
    if (pinned.body.length === 0) await pin({ title: `Bars ${HOSTILE.img}`, sql_query: BAR_SQL, chart_type: 'bar', x_axis_column: HOSTILE_COLUMN, y_axis_columns: ['n'] });
    await pin({ title: 'Line of n', sql_query: 'SELECT id, n FROM items ORDER BY id', chart_type: 'line', x_axis_column: 'id', y_axis_columns: ['n'] });
    await pin({ title: 'Share', sql_query: `SELECT title AS "${HOSTILE_COLUMN}", n FROM items ORDER BY n`, chart_type: 'pie', x_axis_column: HOSTILE_COLUMN, y_axis_columns: ['n'] });
    await pin({ title: 'Count', sql_query: 'SELECT count(*)::int AS total FROM items', chart_type: 'number', y_axis_columns: ['total'] });

    // Off for a new workspace: a member is told so, with nothing to turn it on.
    const m = await signedIn(c, member.token, `/console/w/${ws.id}/dashboard`);
    await heading(m.page, 'Dashboard');
    await expect.poll(() => m.page.getByText('The dashboard is turned off for this workspace.').count()).toBe(1);
    expect(await m.page.getByRole('button', { name: 'Turn the dashboard on' }).count()).toBe(0);
    expect(await m.page.getByRole('figure').count()).toBe(0);

    const { page, problems } = await signedIn(c, owner.token, `/console/w/${ws.id}/dashboard`);
    await heading(page, 'Dashboard');
    // An admin turns it on.
    await page.getByRole('button', { name: 'Turn the dashboard on' }).click();
    await expect.poll(async () => (await h.call('GET', `/api/v1/workspaces/${ws.id}/setup/dashboard-enabled`, { token: owner.token })).body.enabled).toBe(true);
    const bars = page.getByRole('figure', { name: `Bars ${HOSTILE.img}` });
    // Counted: the x positions uPlot's instance holds (data-points, from u.data[0]) and the rows of the hidden values table.
    await expect.poll(() => bars.locator('.plot').getAttribute('data-points'), { timeout: 15_000 }).toBe('8');
    expect(await bars.locator('canvas').count()).toBeGreaterThan(0);
    expect(await bars.getByRole('table', { name: `Values of Bars ${HOSTILE.img}` }).locator('tbody tr').count()).toBe(8);
    expect(await bars.getByRole('rowheader', { name: HOSTILE.script, exact: true }).count()).toBe(1);
    expect(await bars.getByRole('columnheader', { name: HOSTILE_COLUMN }).count()).toBe(1);
    expect(await bars.getByRole('img', { name: `Bar chart of n by ${HOSTILE_COLUMN}, 8 points` }).count()).toBe(1);
    const line = page.getByRole('figure', { name: 'Line of n' });
    await expect.poll(() => line.locator('.plot').getAttribute('data-points')).toBe('8');
    const pie = page.getByRole('figure', { name: 'Share' });
    await expect.poll(() => pie.locator('svg path.slice').count()).toBe(8);
    // Each slice's label and share, as text: in the legend and in the slice's SVG <title>.
    expect(await pie.locator('.pie-legend li', { hasText: `${HOSTILE.img}: 1 (1.3%)` }).count()).toBe(1);
    expect(await pie.locator('svg path.slice title', { hasText: `${HOSTILE.img}: 1 (1.3%)` }).count()).toBe(1);
    const count = page.getByRole('figure', { name: 'Count' });
    await expect.poll(() => count.locator('.figure').textContent()).toBe('8');
    expect(await fitsWidth(page)).toBe(true);
    await shot(page, 'console-dashboard-admin');
    expect(await a11yViolations(page)).toEqual([]);

    // The member: their own numbers, and no unpin of the admin's charts.
    await m.page.reload();
    await heading(m.page, 'Dashboard');
    const mBars = m.page.getByRole('figure', { name: `Bars ${HOSTILE.img}` });
    await expect.poll(() => mBars.locator('.plot').getAttribute('data-points'), { timeout: 15_000 }).toBe('5');
    await expect.poll(() => m.page.getByRole('figure', { name: 'Count' }).locator('.figure').textContent()).toBe('5');
    await expect.poll(() => m.page.getByRole('figure', { name: 'Share' }).locator('svg path.slice').count()).toBe(5);
    expect(await m.page.getByRole('button', { name: /^Unpin/ }).count()).toBe(0);
    await shot(m.page, 'console-dashboard-member');
    expect(await a11yViolations(m.page)).toEqual([]);
    expect(m.problems).toEqual([]);
    await m.page.close();

    // The admin unpins a chart: gone from the page and from the API's list.
    await page.getByRole('button', { name: 'Unpin the chart Line of n' }).click();
    await page.getByRole('button', { name: 'Yes, unpin Line of n' }).click();
    await expect.poll(() => page.getByRole('figure', { name: 'Line of n' }).count()).toBe(0);
    const left = await h.call('GET', '/api/v1/pinned-charts', { token: owner.token, workspace: ws.id });
    expect(left.body.map((x: any) => x.title).sort()).toEqual([`Bars ${HOSTILE.img}`, 'Count', 'Share']);
    expect(problems).toEqual([]);
    await page.close();
  });
});
