import { mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleHarness, HOSTILE, a11yViolations, fitsWidth, heading, openConsole, shot, signedIn } from './console-support.js';
import { ADMIN_TOKEN, type Harness } from './support.js';

/**
 * The console's Files, Documents, Audit log and Members and settings pages in a real browser, as a person uses
 * them: a 200 MB upload with its progress (and one cancelled, which leaves nothing behind), a text preview and a
 * download; a document edited twice and the diff of its versions; the audit log filtered and followed to a resource;
 * an invitation, an API key shown once, a settings change saved and one refused. Hostile values (file names,
 * document content, audit details, names) render as inert text.
 */
let c: ConsoleHarness;
let h: Harness;
let owner: { id: string; email: string; name: string; token: string };
const scratch = mkdtempSync(join(tmpdir(), 'wds-console-content-'));

beforeAll(async () => {
  c = await openConsole();
  h = c.h;
  owner = await h.user('owner');
}, 600_000);
afterAll(async () => {
  await c?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const at = (ws: string, section: string, ...rest: string[]) => ['/console/w', ws, section, ...rest.map(encodeURIComponent)].join('/');
const hostileName = `${HOSTILE.img} ${HOSTILE.rtl}.txt`;
const progressValue = (page: Page) => page.locator('progress').evaluate((p) => (p as unknown as { value: number }).value).catch(() => 0);
/** No image, script or inline handler came out of the data on the page. */
const inert = (page: Page) => page.evaluate("document.querySelectorAll('main img, main script, main [onerror]').length");

async function uploadJson(ws: string, filename: string, text: string) {
  const r = await h.call('POST', `/api/v1/workspaces/${ws}/files`, {
    token: owner.token,
    workspace: ws,
    body: { filename, content_type: 'text/plain', content: Buffer.from(text).toString('base64') },
  });
  expect(r.status).toBe(201);
  return r.body as { id: string };
}

describe('the console: files, documents, audit log, members and settings', () => {
  it('a 200 MB upload shows its progress and completes; a cancelled one leaves nothing; a text preview and a download', async () => {
    const ws = await h.workspace(owner.token, 'files');
    const text = `first line ${HOSTILE.script}\n${HOSTILE.img}\n${HOSTILE.long}\n${HOSTILE.rtl}\n`;
    await uploadJson(ws.id, hostileName, text);
    // 200 MB of a sparse file: nothing is generated in memory, the browser streams it from disk.
    const big = join(scratch, 'big.bin');
    writeFileSync(big, '');
    truncateSync(big, 200_000_000);

    const { page, problems } = await signedIn(c, owner.token, at(ws.id, 'files'));
    await heading(page, 'Files');
    await expect.poll(() => page.getByRole('link', { name: hostileName }).count()).toBe(1);
    await expect.poll(() => page.getByRole('row', { name: /not embedded/ }).count()).toBe(1);

    // Cancelled: the upload is slowed (the browser's own throttling) so that Cancel comes in the middle of it.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 4_000_000 });
    await page.getByLabel('File to upload (up to 1 GB)').setInputFiles(big);
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await expect.poll(() => progressValue(page), { timeout: 15_000 }).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Cancel upload' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'The upload of big.bin was cancelled; nothing was stored.' }).count()).toBe(1);
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
    // Nothing is left behind: no record, and the temporary blob is removed.
    await expect.poll(() => readdirSync(join(h.blobDir, 'tmp')).length, { timeout: 10_000 }).toBe(0);
    const afterCancel = await h.call('GET', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id });
    expect(afterCancel.body.map((f: any) => f.filename)).toEqual([hostileName]);

    // The whole upload: every value the progress bar took is recorded as the page sets it.
    await page.evaluate(`window.__progress = [];
      new MutationObserver(() => { const p = document.querySelector('progress'); if (p) window.__progress.push(p.value); })
        .observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['value'] });`);
    await page.getByLabel('File to upload (up to 1 GB)').setInputFiles(big);
    await page.getByRole('button', { name: 'Upload', exact: true }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'Uploaded big.bin (200.0 MB).' }).count(), { timeout: 120_000 }).toBe(1);
    const seen = (await page.evaluate('window.__progress')) as number[];
    const between = [...new Set(seen)].filter((v) => v > 0 && v < 200_000_000);
    expect(between.length, `progress values ${seen.join(', ')}`).toBeGreaterThanOrEqual(2);
    expect(between).toEqual([...between].sort((a, b) => a - b));
    const listed = await h.call('GET', `/api/v1/workspaces/${ws.id}/files`, { token: owner.token, workspace: ws.id });
    expect(listed.body.map((f: any) => [f.filename, f.size])).toEqual([
      ['big.bin', 200_000_000],
      [hostileName, Buffer.byteLength(text)],
    ]);
    await expect.poll(() => page.getByRole('row', { name: /big\.bin.*200\.0 MB/ }).count()).toBe(1);
    await shot(page, 'console-files');

    // The text file: its preview is its text, never markup; its download is its bytes.
    await page.getByRole('link', { name: hostileName }).click();
    await expect.poll(() => page.locator('figure.preview pre').textContent()).toBe(text);
    expect(await inert(page)).toBe(0);
    expect(await fitsWidth(page)).toBe(true);
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download' }).click();
    const saved = await (await download).path();
    expect(readFileSync(saved, 'utf8')).toBe(text);
    // Its embedding: asked for here, done by the job queue.
    await page.getByRole('button', { name: `Embed ${hostileName}` }).click();
    await expect
      .poll(
        async () => {
          await page.getByRole('button', { name: 'Refresh embedding status' }).click();
          return page.getByRole('row', { name: /completed/ }).count();
        },
        { timeout: 20_000 },
      )
      .toBe(1);
    await shot(page, 'console-files-preview');
    expect(await a11yViolations(page)).toEqual([]);
    // The cancelled upload's request is the one the browser reports as aborted: it was meant to be.
    expect(problems.filter((p) => !(p.startsWith('request failed:') && p.includes('/files/multipart') && p.includes('ERR_ABORTED')))).toEqual([]);
    await page.close();
  });

  it('a document renders inert, is edited twice, and the diff of its versions shows the changed lines', async () => {
    const ws = await h.workspace(owner.token, 'docs');
    const content = [
      '# Plan',
      'The first line stays.',
      'The second line will change.',
      '[x](javascript:alert(1)) and [web](https://example.com/page)',
      HOSTILE.img,
      HOSTILE.script,
      `<a href="javascript:alert(4)">raw link</a> ![pic](https://example.com/pic.png)`,
      HOSTILE.rtl,
      HOSTILE.long,
    ].join('\n');
    const doc = await h.call('POST', `/api/v1/workspaces/${ws.id}/documents`, {
      token: owner.token,
      workspace: ws.id,
      body: { title: `Plan ${HOSTILE.img}`, doc_type: 'note', status: 'draft', content },
    });
    expect(doc.status).toBe(201);

    const { page, problems } = await signedIn(c, owner.token, at(ws.id, 'documents'));
    await heading(page, 'Documents');
    await page.getByRole('link', { name: `Plan ${HOSTILE.img}` }).click();
    const article = page.getByRole('article');
    await expect.poll(() => article.getByRole('heading', { name: 'Plan' }).count()).toBe(1);
    // Only the http(s) link is a link; javascript: links have lost their href; no image, script or handler.
    expect(await article.getByRole('link').evaluateAll((as) => as.map((a) => a.getAttribute('href')))).toEqual(['https://example.com/page']);
    expect(await article.locator('a:not([href])').allTextContents()).toEqual(['x', 'raw link']);
    expect(await article.textContent()).toContain('[image: pic]');
    expect(await inert(page)).toBe(0);
    expect(await fitsWidth(page)).toBe(true);

    const edit = async (from: string, to: string, version: number) => {
      await page.getByRole('button', { name: 'Edit' }).click();
      const box = page.getByLabel('Content (Markdown)');
      await box.fill((await box.inputValue()).replace(from, to));
      // Saved by keyboard: Tab from the text box to Save, then Enter.
      await box.press('Tab');
      await page.keyboard.press('Enter');
      await expect.poll(() => page.getByRole('status').filter({ hasText: `Saved as version ${version}.` }).count()).toBe(1);
    };
    await edit('The second line will change.', 'The second line has changed.', 2);
    await edit('The first line stays.', 'The first line stays.\nA line added in version 3.', 3);

    const versions = await h.call('GET', `/api/v1/workspaces/${ws.id}/documents/${doc.body.id}/versions`, { token: owner.token, workspace: ws.id });
    expect(versions.body.map((v: any) => v.version)).toEqual([3, 2, 1]);
    // By default: the last change (2 → 3); then from the first version to the last.
    const diff = page.locator('figure.diff');
    await expect.poll(() => diff.locator('figcaption').textContent()).toBe('Changes from version 2 to version 3: 1 line added, 0 removed.');
    expect(await diff.locator('.line.added').allTextContents()).toEqual(['+ A line added in version 3.\n']);
    await page.getByLabel('From version').selectOption('1');
    await expect.poll(() => diff.locator('figcaption').textContent()).toBe('Changes from version 1 to version 3: 2 lines added, 1 removed.');
    expect(await diff.locator('.line.removed').allTextContents()).toEqual(['− The second line will change.\n']);
    expect(await diff.locator('.line.added').allTextContents()).toEqual(['+ A line added in version 3.\n', '+ The second line has changed.\n']);
    // The diff shows the document's hostile lines as text too.
    expect(await diff.textContent()).toContain(HOSTILE.img);
    expect(await inert(page)).toBe(0);
    await shot(page, 'console-documents');
    expect(await a11yViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('the audit log filters by operation and time, shows details as text and links to the resource', async () => {
    const ws = await h.workspace(owner.token, 'audit');
    const file = await uploadJson(ws.id, hostileName, 'audited');
    await h.call('POST', `/api/v1/workspaces/${ws.id}/documents`, {
      token: owner.token,
      workspace: ws.id,
      body: { title: HOSTILE.script, doc_type: HOSTILE.link, status: HOSTILE.rtl, content: 'x' },
    });

    const { page, problems } = await signedIn(c, owner.token, at(ws.id, 'audit'));
    await heading(page, 'Audit log');
    await expect.poll(() => page.getByRole('cell', { name: 'create_document' }).count()).toBe(1);
    expect(await page.getByRole('cell', { name: 'create_workspace' }).count()).toBe(1);

    await page.getByLabel('Operation').fill('upload_file');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'create_document' }).count()).toBe(0);
    expect(page.url()).toContain('action=upload_file');
    expect(await page.getByRole('cell', { name: 'upload_file' }).count()).toBe(1);
    // The hostile file name is in the entry's details, as text.
    expect(await page.locator('pre.details').first().textContent()).toContain(HOSTILE.img);
    expect(await inert(page)).toBe(0);
    expect(await fitsWidth(page)).toBe(true);
    await shot(page, 'console-audit');
    expect(await a11yViolations(page)).toEqual([]);

    // A time range that ends before the workspace existed has nothing.
    await page.getByLabel('Operation').fill('');
    await page.getByLabel('Until').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.getByText('No entries match these filters.').count()).toBe(1);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'create_document' }).count()).toBe(1);

    // The document entry's hostile labels are text; the upload's entry links to the file on the Files page.
    expect(await page.getByRole('link', { name: HOSTILE.link }).count()).toBe(0);
    await page.getByRole('link', { name: file.id }).click();
    await heading(page, 'Files');
    await expect.poll(() => page.getByRole('heading', { name: hostileName, level: 2 }).count()).toBe(1);
    expect(new URL(page.url()).pathname).toBe(at(ws.id, 'files', file.id));
    expect(problems).toEqual([]);
    await page.close();
  });

  it('members, invitations, an API key shown once, settings saved and a refused one explained', async () => {
    const ws = await h.workspace(owner.token, 'settings');
    const made = await h.call('POST', '/admin/v1/users', { headers: { 'x-admin-token': ADMIN_TOKEN }, body: { email: h.uniqueEmail('hostile'), name: HOSTILE.img } });
    const member = await h.addMember(owner.token, ws.id, made.body.email, 'member');
    const group = await h.group(owner.token, ws.id, { name: `approvers ${HOSTILE.rtl}` });

    const { page, problems } = await signedIn(c, owner.token, at(ws.id, 'settings'));
    await heading(page, 'Members and settings');
    await expect.poll(() => page.getByRole('cell', { name: HOSTILE.img, exact: true }).count()).toBe(1);

    // A member's role changes; someone without an account is invited.
    await page.getByLabel(`Role of ${HOSTILE.img}`).selectOption('admin');
    await expect.poll(() => page.getByRole('status').filter({ hasText: `${HOSTILE.img} is now an admin.` }).count()).toBe(1);
    const members = await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token });
    expect(members.body.find((m: any) => m.id === member.id).role).toBe('admin');
    const invitee = h.uniqueEmail('invitee');
    // By keyboard: Enter in the email field sends the invitation.
    await page.getByLabel('Invite by email').fill(invitee);
    await page.getByLabel('Invite by email').press('Enter');
    await expect.poll(() => page.getByRole('cell', { name: invitee, exact: true }).count()).toBe(1);
    const invitations = await h.call('GET', `/api/v1/workspaces/${ws.id}/invitations`, { token: owner.token });
    expect(invitations.body.map((i: any) => [i.email, i.role])).toEqual([[invitee, 'member']]);

    // An API key: its raw value is shown once, and it works.
    await page.getByLabel("New key's name").fill(`agent ${HOSTILE.img}`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    const keyBox = page.getByLabel(`New key agent ${HOSTILE.img}: copy it now, it will not be shown again`);
    await expect.poll(() => keyBox.count()).toBe(1);
    const key = await keyBox.inputValue();
    expect(key).toMatch(/^svc_/);
    expect((await h.call('GET', '/api/v1/auth/me', { token: key })).body.id).toBe(owner.id);
    await expect.poll(() => page.getByRole('cell', { name: `agent ${HOSTILE.img}`, exact: true }).count()).toBe(1);

    // Settings: the SQL approval ones, the dashboard flag and the MCP limit, saved and read back from the API.
    await page.getByLabel('Statements that wait for approval').selectOption('write_only');
    await page.getByLabel('Whose statements wait').selectOption('everyone');
    await page.getByLabel('Group that approves (besides admins)').selectOption({ label: `approvers ${HOSTILE.rtl}` });
    await page.getByLabel('An approver may approve their own proposal').check();
    await page.getByLabel('Dashboard enabled (pinned charts are shown to members)').check();
    await page.getByLabel('Group that may change the schema (DDL)').selectOption({ label: `approvers ${HOSTILE.rtl}` });
    await page.getByLabel('MCP tool-call time limit (milliseconds)').fill('600000');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'The settings were saved.' }).count()).toBe(1);
    const saved = await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token });
    expect(saved.body).toMatchObject({
      sql_approval_mode: 'write_only',
      sql_approval_applies_to: 'everyone',
      sql_approver_policy_group_id: group,
      sql_self_approval: true,
      ddl_policy_group_id: group,
      mcp_timeout_ms: 600000,
    });
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}/setup/dashboard-enabled`, { token: owner.token })).body).toEqual({ enabled: true });
    await shot(page, 'console-settings');
    expect(await a11yViolations(page)).toEqual([]);

    // A value the API refuses: its code and details are shown, and nothing changes.
    await page.getByLabel('MCP tool-call time limit (milliseconds)').fill('1000');
    await page.getByRole('button', { name: 'Save settings' }).click();
    const alert = page.getByRole('alert', { name: 'Settings' });
    await expect.poll(() => alert.textContent()).toContain('VALIDATION_ERROR');
    expect(await alert.textContent()).toContain('mcp_timeout_ms: must be 30000-3600000');
    expect((await h.call('GET', `/api/v1/workspaces/${ws.id}`, { token: owner.token })).body.mcp_timeout_ms).toBe(600000);
    expect(await inert(page)).toBe(0);
    expect(await fitsWidth(page)).toBe(true);
    await shot(page, 'console-settings-refused');

    // Shown once: after a reload the key is only listed, by its first characters.
    await page.reload();
    await heading(page, 'Members and settings');
    await expect.poll(() => page.getByRole('cell', { name: `agent ${HOSTILE.img}`, exact: true }).count()).toBe(1);
    expect(await page.getByText(key).count()).toBe(0);
    expect(await page.locator('input[readonly]').count()).toBe(0);
    // The refused PATCH is the one failed request the page reports (the browser logs a 400).
    expect(problems.filter((p) => !p.includes('400'))).toEqual([]);
    await page.close();
  });
});
