// Issue 19: inbound webhooks. A hook URL needs no credential and no workspace header; a delivery must be signed with
// the hook's secret (GitHub or Stripe style) over its raw bytes, and one that is not runs nothing and records nothing;
// JSON and form bodies become $input of a run as the hook's creator; delivery ids de-duplicate; the secret is shown
// once and rotates; another workspace reaches nothing.
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, eventually } from './support.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
let h: Harness;
let owner: Awaited<ReturnType<Harness['user']>>;
let member: Awaited<ReturnType<Harness['user']>>;
let ws: { id: string };
let wf: string;

const call = (method: string, path: string, body?: unknown, token = owner.token, workspace = ws.id) => h.call(method, path, { token, workspace, body });
const hooks = (workflowId = wf) => `/api/v1/workflows/${workflowId}/hooks`;
const sign = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
const stripeSign = (secret: string, body: string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;

/** A delivery as a sender makes it: raw bytes, its own headers, nothing of ours. */
const deliver = async (path: string, body: string, headers: Record<string, string>): Promise<Response> =>
  h.app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
/**
 * A delivery over a real connection, its body written in pieces as a streaming sender does: with
 * `Transfer-Encoding: chunked` (no Content-Length) unless the headers declare a length; the status and body of the answer.
 */
async function deliverChunked(path: string, pieces: string[], headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const base = new URL(await h.listen());
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: base.hostname, port: base.port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    // A server that answers before the whole body is sent may close the connection under the writer.
    req.on('error', reject);
    for (const p of pieces) req.write(p);
    req.end();
  });
}
const runsOf = async (workflowId = wf) => (await call('GET', `/api/v1/workflows/${workflowId}/runs?limit=100`)).body as any[];
async function ended(runId: string): Promise<any> {
  let last: any;
  await eventually(async () => {
    last = (await call('GET', `/api/v1/workflows/${wf}/runs/${runId}`)).body;
    return !['queued', 'running'].includes(last.status);
  }, 20_000);
  return last;
}

beforeAll(async () => {
  h = await Harness.create();
  owner = await h.user('owner');
  member = await h.user('member');
  ws = await h.workspace(owner.token, 'Hooked');
  await h.addMember(owner.token, ws.id, member.email, 'member');
  const stf = await call('POST', '/api/v1/stfs', { name: 'echo', version: '1', runtime: 'javascript', code: b64('return { got: $input };') });
  const w = await call('POST', '/api/v1/workflows', { name: 'on-push', stf_steps: [{ stf_version_id: stf.body.version.id, input_mappings: [] }] });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  wf = w.body.id;
});
afterAll(async () => {
  await h?.close();
});

describe('webhooks', () => {
  it('a signed JSON delivery runs the workflow as the hook creator with the body as $input (202 with the run)', async () => {
    const created = await call('POST', hooks(), { name: 'github push' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ workflow_id: wf, name: 'github push', paused: false, created_by: owner.id, path: `/api/v1/hooks/${created.body.id}` });
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const { path, secret } = created.body;
    // The secret is never shown again.
    expect(JSON.stringify((await call('GET', `${hooks()}/${created.body.id}`)).body)).not.toContain(secret);
    expect(JSON.stringify((await call('GET', hooks())).body)).not.toContain(secret);

    const body = JSON.stringify({ ref: 'refs/heads/main', commits: 3 });
    const res = await deliver(path, body, { 'x-hub-signature-256': sign(secret, body), 'x-github-delivery': 'd-1' });
    expect(res.status).toBe(202);
    const answer = (await res.json()) as any;
    expect(answer).toEqual({ run_id: expect.any(String), status: 'queued', duplicate: false });
    const run = await ended(answer.run_id);
    expect(run).toMatchObject({ status: 'succeeded', trigger: 'webhook', trigger_id: created.body.id, executed_by: owner.id, input: { ref: 'refs/heads/main', commits: 3 } });

    // The same delivery again (the sender retried): the first run, nothing new.
    const before = (await runsOf()).length;
    const again = await deliver(path, body, { 'x-hub-signature-256': sign(secret, body), 'x-github-delivery': 'd-1' });
    // It answers the first run as it is now (it has ended by now).
    expect(await again.json()).toEqual({ run_id: answer.run_id, status: 'succeeded', duplicate: true });
    expect((await runsOf()).length).toBe(before);

    // Replayed by someone who saw it, with another delivery id (or none): the same signature, the same delivery.
    const replayed = await deliver(path, body, { 'x-hub-signature-256': sign(secret, body), 'x-github-delivery': 'forged-2' });
    expect(await replayed.json()).toEqual({ run_id: answer.run_id, status: 'succeeded', duplicate: true });
    const bare = await deliver(path, body, { 'x-hub-signature-256': sign(secret, body) });
    expect(((await bare.json()) as any).run_id).toBe(answer.run_id);
    expect((await runsOf()).length).toBe(before);

    // Audited: the delivery (no user: the hook's URL is the credential) and the run's end as its user.
    const audit = (await call('GET', '/api/v1/audit-logs?action=deliver_workflow_hook')).body;
    expect(audit.map((e: any) => e.details.run_id)).toContain(answer.run_id);
  });

  it('redeliveries at the same moment make one run, and every one of them answers it', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const body = JSON.stringify({ burst: true });
    const before = (await runsOf()).length;
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => deliver(hook.path, body, { 'x-hub-signature-256': sign(hook.secret, body), 'x-delivery-id': 'same' }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))),
    );
    expect(answers.every((a) => a.status === 202)).toBe(true);
    expect(new Set(answers.map((a) => a.body.run_id)).size).toBe(1);
    expect(answers.filter((a) => !a.body.duplicate).length).toBe(1);
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('a form-encoded delivery and a Stripe-style signature work too', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const form = 'event=paid&amount=42&tag=a&tag=b';
    const res = await h.app.request(hook.path, {
      method: 'POST',
      body: form,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'stripe-signature': stripeSign(hook.secret, form) },
    });
    expect(res.status).toBe(202);
    const run = await ended(((await res.json()) as any).run_id);
    expect(run.input).toEqual({ event: 'paid', amount: '42', tag: ['a', 'b'] });
    // A Stripe signature older than five minutes is refused.
    const old = await deliver(hook.path, '{}', { 'stripe-signature': stripeSign(hook.secret, '{}', Math.floor(Date.now() / 1000) - 600) });
    expect(old.status).toBe(401);
  });

  it('every spelling of one signature is one delivery: de-duplicated by the MAC it proves, not the header text (issue 28)', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const body = JSON.stringify({ pay: 'once' });
    const hex = createHmac('sha256', hook.secret).update(body).digest('hex');
    const first = await deliver(hook.path, body, { 'x-hub-signature-256': `sha256=${hex}` });
    expect(first.status).toBe(202);
    const { run_id } = (await first.json()) as any;
    const before = (await runsOf()).length;
    const mixed = [...hex].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
    const respelt: Record<string, string>[] = [
      { 'x-hub-signature-256': `sha256=${hex.toUpperCase()}` },
      { 'x-hub-signature-256': `sha256=${mixed}` },
      { 'x-signature-256': `sha256=${hex}` },
      { 'x-hub-signature-256': `sha256=${hex}`, 'x-github-delivery': 'another-id' },
      { 'x-hub-signature-256': `sha256=${hex.toUpperCase()}`, 'idempotency-key': 'k-1', 'content-type': 'application/x-www-form-urlencoded' },
    ];
    for (const headers of respelt) {
      const r = await deliver(hook.path, body, headers);
      expect([r.status, await r.json()], JSON.stringify(headers)).toEqual([202, { run_id, status: expect.any(String), duplicate: true }]);
    }

    // Stripe style: parts in any order, spaces, extra schemes, a repeated v1, hex in either case — one delivery.
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac('sha256', hook.secret).update(`${t}.${body}`).digest('hex');
    const stripeFirst = await deliver(hook.path, body, { 'stripe-signature': `t=${t},v1=${v1}` });
    expect(stripeFirst.status).toBe(202);
    const stripeRun = ((await stripeFirst.json()) as any).run_id;
    expect(stripeRun).not.toBe(run_id);
    for (const sig of [`v1=${v1},t=${t}`, `t=${t}, v1=${v1}`, ` t = ${t} ,v1= ${v1.toUpperCase()}`, `t=${t},v0=${'0'.repeat(64)},v1=${v1}`, `t=${t},v1=${'f'.repeat(64)},v1=${v1}`, `t=${t},v1=${v1},v1=${v1}`]) {
      const r = await deliver(hook.path, body, { 'stripe-signature': sig });
      expect([r.status, ((await r.json()) as any).run_id], sig).toEqual([202, stripeRun]);
    }
    expect((await runsOf()).length).toBe(before + 1);

    // What is not one canonical signature is refused: two t, a malformed part, two signature headers, a time too far ahead.
    const later = t + 1;
    const v1Later = createHmac('sha256', hook.secret).update(`${later}.${body}`).digest('hex');
    const ahead = t + 600;
    const v1Ahead = createHmac('sha256', hook.secret).update(`${ahead}.${body}`).digest('hex');
    const malformed: Record<string, string>[] = [
      { 'stripe-signature': `t=${later},t=${t},v1=${v1Later}` },
      { 'stripe-signature': `t=${later},v1=${v1Later},junk` },
      { 'stripe-signature': `t=${later},v1=${v1Later}=x` },
      { 'stripe-signature': `t=${later},v1=${v1Later}`, 'x-hub-signature-256': `sha256=${hex}` },
      { 'x-hub-signature-256': `sha256=${hex}`, 'x-signature-256': `sha256=${hex}` },
      { 'stripe-signature': `t=${ahead},v1=${v1Ahead}` },
    ];
    for (const headers of malformed) {
      expect((await deliver(hook.path, body, headers)).status, JSON.stringify(headers)).toBe(401);
    }
    expect((await runsOf()).length).toBe(before + 1);
  });

  it('a wrong, missing, or foreign signature, an unknown, paused or deleted hook: the same 401, nothing run or recorded', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const { body: otherHook } = await call('POST', hooks(), {});
    const body = JSON.stringify({ n: 1 });
    const runsBefore = (await runsOf()).length;
    const auditBefore = (await call('GET', '/api/v1/audit-logs?action=deliver_workflow_hook&limit=1000')).body.length;
    const refusals = [
      await deliver(hook.path, body, {}),
      await deliver(hook.path, body, { 'x-hub-signature-256': sign('whsec_wrong', body) }),
      await deliver(hook.path, body, { 'x-hub-signature-256': sign(otherHook.secret, body) }),
      // Signed for other bytes than those sent.
      await deliver(hook.path, `${body} `, { 'x-hub-signature-256': sign(hook.secret, body) }),
      await deliver(hook.path, body, { 'x-hub-signature-256': 'sha256=zz' }),
      await deliver('/api/v1/hooks/00000000-0000-4000-8000-000000000000', body, { 'x-hub-signature-256': sign(hook.secret, body) }),
    ];
    // Not even an id: 404 like any path with a malformed id.
    expect((await deliver('/api/v1/hooks/not-a-uuid', body, { 'x-hub-signature-256': sign(hook.secret, body) })).status).toBe(404);
    expect((await call('PATCH', `${hooks()}/${hook.id}`, { paused: true })).body.paused).toBe(true);
    refusals.push(await deliver(hook.path, body, { 'x-hub-signature-256': sign(hook.secret, body) }));
    expect((await call('DELETE', `${hooks()}/${otherHook.id}`)).status).toBe(204);
    refusals.push(await deliver(otherHook.path, body, { 'x-hub-signature-256': sign(otherHook.secret, body) }));
    const bodies = new Set<string>();
    for (const r of refusals) {
      expect(r.status).toBe(401);
      bodies.add(await r.text());
    }
    // All alike: nothing tells an unknown hook from a bad signature.
    expect(bodies.size).toBe(1);
    expect((await runsOf()).length).toBe(runsBefore);
    expect((await call('GET', '/api/v1/audit-logs?action=deliver_workflow_hook&limit=1000')).body.length).toBe(auditBefore);
    // Resumed, it works again.
    await call('PATCH', `${hooks()}/${hook.id}`, { paused: false });
    expect((await deliver(hook.path, body, { 'x-hub-signature-256': sign(hook.secret, body) })).status).toBe(202);
  });

  it('rotating the secret stops the old one at once; bodies are bounded and typed', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const rotated = await call('POST', `${hooks()}/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(hook.secret);
    const body = '{"n":2}';
    expect((await deliver(hook.path, body, { 'x-hub-signature-256': sign(hook.secret, body) })).status).toBe(401);
    expect((await deliver(hook.path, body, { 'x-hub-signature-256': sign(rotated.body.secret, body) })).status).toBe(202);

    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const tooBig = await deliver(hook.path, big, { 'x-hub-signature-256': sign(rotated.body.secret, big) });
    expect(tooBig.status).toBe(413);
    const xml = '<event/>';
    const wrongType = await h.app.request(hook.path, {
      method: 'POST',
      body: xml,
      headers: { 'content-type': 'application/xml', 'x-hub-signature-256': sign(rotated.body.secret, xml) },
    });
    expect(wrongType.status).toBe(415);
    const notJson = await deliver(hook.path, '{nope', { 'x-hub-signature-256': sign(rotated.body.secret, '{nope') });
    expect(notJson.status).toBe(400);
  });

  it('a chunked delivery (no Content-Length) is read whole and verified; over the limit it is 413 as well (issue 29)', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    const body = JSON.stringify({ framed: 'chunked', pad: 'y'.repeat(100_000) });
    const pieces = [body.slice(0, 7), body.slice(7, 60_000), body.slice(60_000)];
    const res = await deliverChunked(hook.path, pieces, { 'x-hub-signature-256': sign(hook.secret, body) });
    expect([res.status, res.body]).toEqual([202, { run_id: expect.any(String), status: 'queued', duplicate: false }]);
    expect((await ended(res.body.run_id)).input).toMatchObject({ framed: 'chunked' });
    // Signed for other bytes: still the 401 of any bad signature.
    expect((await deliverChunked(hook.path, pieces, { 'x-hub-signature-256': sign(hook.secret, `${body} `) })).status).toBe(401);

    // Over HOOK_MAX_BODY_BYTES (1 MiB here) without a declared length: refused with the same code as with one.
    const big = JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 10) });
    const before = (await runsOf()).length;
    const tooBig = await deliverChunked(hook.path, [big.slice(0, 512 * 1024), big.slice(512 * 1024)], { 'x-hub-signature-256': sign(hook.secret, big) });
    expect([tooBig.status, tooBig.body?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    // The same with a declared length (within MAX_BODY_BYTES, over the hook's own limit): the 413 reaches the sender.
    const declared = await deliverChunked(hook.path, [big.slice(0, 512 * 1024), big.slice(512 * 1024)], {
      'x-hub-signature-256': sign(hook.secret, big),
      'content-length': String(Buffer.byteLength(big)),
    });
    expect([declared.status, declared.body?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect((await runsOf()).length).toBe(before);
    // A delivery after it is answered as usual.
    expect((await deliverChunked(hook.path, ['{"after":', '1}'], { 'x-hub-signature-256': sign(hook.secret, '{"after":1}') })).status).toBe(202);
  });

  it('members read hooks but only workflow editors manage them; another workspace reaches nothing', async () => {
    const { body: hook } = await call('POST', hooks(), {});
    expect((await call('GET', `${hooks()}/${hook.id}`, undefined, member.token)).status).toBe(200);
    expect((await call('POST', hooks(), {}, member.token)).status).toBe(403);
    expect((await call('POST', `${hooks()}/${hook.id}/rotate-secret`, undefined, member.token)).status).toBe(403);
    expect((await call('PATCH', `${hooks()}/${hook.id}`, { paused: true }, member.token)).status).toBe(403);
    expect((await call('DELETE', `${hooks()}/${hook.id}`, undefined, member.token)).status).toBe(403);

    const stranger = await h.user('stranger');
    const theirs = await h.workspace(stranger.token, 'Theirs');
    for (const [method, path] of [
      ['GET', hooks()],
      ['GET', `${hooks()}/${hook.id}`],
      ['POST', `${hooks()}/${hook.id}/rotate-secret`],
      ['DELETE', `${hooks()}/${hook.id}`],
      ['POST', hooks()],
    ] as const) {
      const r = await call(method, path, method === 'POST' && path === hooks() ? {} : undefined, stranger.token, theirs.id);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain(hook.id);
    }
  });

  it('a hook changed by another editor runs as that editor; one whose owner is no longer an editor runs nothing', async () => {
    const second = await h.user('second-admin');
    await h.addMember(owner.token, ws.id, second.email, 'admin');
    const { body: hook } = await call('POST', hooks(), {});
    const rotated = await h.call('POST', `${hooks()}/${hook.id}/rotate-secret`, { token: second.token, workspace: ws.id });
    expect(rotated.body.created_by).toBe(second.id);
    // Demoted to member: still in the workspace, no longer a workflow editor (admins, while no editor group is set).
    const members = (await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token })).body;
    const m = members.find((x: any) => x.user_id === second.id);
    expect((await h.call('PATCH', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token, body: { role: 'member' } })).status).toBe(200);
    const res = await deliver(hook.path, '{}', { 'x-hub-signature-256': sign(rotated.body.secret, '{}') });
    expect(res.status).toBe(202);
    const run = await ended(((await res.json()) as any).run_id);
    expect(run).toMatchObject({ status: 'failed', executed_by: second.id, error: { kind: 'forbidden' }, steps: [] });
    expect(run.error.message).toMatch(/no longer a workflow editor/);
  });

  it('a delivery to a hook whose creator left queues a run that runs nothing and says why', async () => {
    const leaving = await h.user('leaving');
    await h.addMember(owner.token, ws.id, leaving.email, 'admin');
    const hook = (await h.call('POST', hooks(), { token: leaving.token, workspace: ws.id, body: {} })).body;
    const members = (await h.call('GET', `/api/v1/workspaces/${ws.id}/members`, { token: owner.token })).body;
    const m = members.find((x: any) => x.user_id === leaving.id);
    expect((await h.call('DELETE', `/api/v1/workspaces/${ws.id}/members/${m.id}`, { token: owner.token })).status).toBe(204);
    const res = await deliver(hook.path, '{}', { 'x-hub-signature-256': sign(hook.secret, '{}') });
    expect(res.status).toBe(202);
    expect(await ended(((await res.json()) as any).run_id)).toMatchObject({ status: 'failed', error: { kind: 'forbidden' }, steps: [] });
  });
});
