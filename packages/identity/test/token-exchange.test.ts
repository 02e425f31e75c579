import { ServiceError } from '@wds/errors';
import { describe, expect, it } from 'vitest';
import { exchangeToken, type TokenExchangeDeps } from '../src/index.js';

/** A fetch that records what it was sent and answers `answer` (or throws it). */
function server(answer: Response | Error) {
  const sent: { url: string; init: RequestInit; form: URLSearchParams }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    sent.push({ url, init, form: new URLSearchParams(init.body as URLSearchParams) });
    if (answer instanceof Error) throw answer;
    return answer;
  }) as typeof globalThis.fetch;
  return { sent, fetch };
}

const deps = (fetch: typeof globalThis.fetch, extra: Partial<TokenExchangeDeps> = {}): TokenExchangeDeps => ({
  tokenUrl: 'https://auth.example/token',
  clientId: 'cid',
  clientSecret: 'secret',
  fetch,
  ...extra,
});

const code = { grant_type: 'authorization_code', code: 'c1', redirect_uri: 'https://app.example/cb' };

async function failure(p: Promise<unknown>): Promise<ServiceError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ServiceError);
  return err as ServiceError;
}

describe('exchangeToken', () => {
  it('forwards an authorization_code grant with the client credentials and hands back the answer', async () => {
    const s = server(Response.json({ access_token: 'at' }, { status: 200 }));
    expect(await exchangeToken(deps(s.fetch), { ...code, code_verifier: 'v' })).toEqual({ status: 200, body: { access_token: 'at' } });
    expect(s.sent).toHaveLength(1);
    const [req] = s.sent;
    expect(req!.url).toBe('https://auth.example/token');
    expect(req!.init).toMatchObject({
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    });
    expect(Object.fromEntries(req!.form)).toEqual({
      code: 'c1',
      redirect_uri: 'https://app.example/cb',
      code_verifier: 'v',
      grant_type: 'authorization_code',
      client_id: 'cid',
      client_secret: 'secret',
    });
  });

  it('forwards a refresh_token grant; absent client credentials are left out; OAuth errors keep their status', async () => {
    const s = server(Response.json({ error: 'invalid_grant' }, { status: 400 }));
    const answer = await exchangeToken(deps(s.fetch, { clientId: undefined, clientSecret: undefined }), { grant_type: 'refresh_token', refresh_token: 'r' });
    expect(answer).toEqual({ status: 400, body: { error: 'invalid_grant' } });
    expect(Object.fromEntries(s.sent[0]!.form)).toEqual({ refresh_token: 'r', grant_type: 'refresh_token' });
  });

  it.each([
    [{ grant_type: 'authorization_code', redirect_uri: 'https://a/cb' }, 'invalid_request', 'code is required'],
    [{ grant_type: 'authorization_code', code: 'c' }, 'invalid_request', 'redirect_uri is required'],
    [{ ...code, redirect_uri: 'not a url' }, 'invalid_request', 'redirect_uri must be an absolute HTTPS URL'],
    [{ ...code, redirect_uri: 'http://app.example/cb' }, 'invalid_request', 'redirect_uri must use https'],
    [{ grant_type: 'refresh_token' }, 'invalid_request', 'refresh_token is required'],
    [{ grant_type: 'password' }, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token'],
  ])('refuses %j without asking the server (even unconfigured)', async (req, error, description) => {
    const s = server(new Error('not called'));
    expect(await exchangeToken(deps(s.fetch, { tokenUrl: undefined }), req)).toEqual({ refused: { error, description } });
    expect(s.sent).toHaveLength(0);
  });

  it('unconfigured: 503; unreachable or non-JSON: 502', async () => {
    const ok = server(Response.json({}));
    const unconfigured = await failure(exchangeToken(deps(ok.fetch, { tokenUrl: undefined }), code));
    expect(unconfigured.toBody()).toEqual({ error: 'Token exchange is not configured', code: 'SERVICE_UNAVAILABLE', details: 'AUTH_TOKEN_URL is not set' });
    expect(ok.sent).toHaveLength(0);

    const down = await failure(exchangeToken(deps(server(new TypeError('fetch failed')).fetch), code));
    expect(down.toBody()).toEqual({ error: 'The authentication server did not answer', code: 'UPSTREAM_ERROR' });

    const html = await failure(exchangeToken(deps(server(new Response('<html>', { status: 500 })).fetch), code));
    expect(html.toBody()).toEqual({ error: 'The authentication server sent a non-JSON answer', code: 'UPSTREAM_ERROR', details: 'status 500' });
  });
});
