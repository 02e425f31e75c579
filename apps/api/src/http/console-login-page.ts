import type { Hono } from 'hono';
import { LOGIN_PAGE_PATH } from '../login-page.js';
import type { AppEnv } from './env.js';

/**
 * The page a login link opens on the embedded default (docs/http-api.md#login-links): it takes the one-time code
 * from the URL's fragment (which no server, log or Referer sees), removes it from the address bar, redeems it for a
 * session token, and keeps that token in the tab's sessionStorage (`wds.token`) for the console. It shows who signed
 * in and signs out again (`POST /api/v1/auth/logout`). Not an operation: like the API reference page, a file.
 */
const SCRIPT_PATH = `${LOGIN_PAGE_PATH}/login.js`;

const SCRIPT = `(function () {
  var heading = document.getElementById('heading');
  var message = document.getElementById('message');
  var signOut = document.getElementById('sign-out');
  function say(title, text) { heading.textContent = title; message.textContent = text; }
  function api(method, path, token, body) {
    var headers = { 'content-type': 'application/json' };
    if (token) headers.authorization = 'Bearer ' + token;
    return fetch(path, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body) })
      .then(function (res) { return res.text().then(function (t) { return { ok: res.ok, status: res.status, body: t ? JSON.parse(t) : null }; }); });
  }
  function signedIn(token) {
    return api('GET', '/api/v1/auth/me', token).then(function (me) {
      if (!me.ok) { sessionStorage.removeItem('wds.token'); return say('Not signed in', 'The session has ended. Ask for a new login link.'); }
      say('Signed in', 'Signed in as ' + me.body.name + ' <' + me.body.email + '>. This tab keeps the session until you sign out.');
      signOut.hidden = false;
    });
  }
  signOut.addEventListener('click', function () {
    var token = sessionStorage.getItem('wds.token');
    api('POST', '/api/v1/auth/logout', token).then(function () {
      sessionStorage.removeItem('wds.token');
      sessionStorage.removeItem('wds.expires_at');
      signOut.hidden = true;
      say('Signed out', 'The session is revoked. A new login link signs you in again.');
    });
  });
  var code = new URLSearchParams(location.hash.slice(1)).get('code');
  // The code is used once: it leaves the address bar (and the history) before anything else happens.
  if (location.hash) history.replaceState(null, '', location.pathname);
  if (!code) {
    var kept = sessionStorage.getItem('wds.token');
    return kept ? signedIn(kept) : say('Not signed in', 'Open the login link you were given; it signs you in once.');
  }
  api('POST', '/api/v1/auth/login-links/redeem', null, { code: code }).then(function (r) {
    if (!r.ok) return say('Sign-in failed', r.status === 429 ? 'Too many failed attempts; try again later.' : 'This login link was already used, has expired, or is wrong. Ask for a new one.');
    sessionStorage.setItem('wds.token', r.body.token);
    sessionStorage.setItem('wds.expires_at', r.body.expires_at);
    return signedIn(r.body.token);
  }, function () { say('Sign-in failed', 'The service could not be reached.'); });
})();
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Sign in — Workspace Data and Automation Service</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 4rem auto; padding: 0 1rem; color: #1d2330; }
  h1 { font-size: 1.6rem; margin-bottom: .5rem; }
  button { font: inherit; padding: .4rem 1rem; border: 1px solid #1d2330; border-radius: .3rem; background: #fff; cursor: pointer; }
</style>
</head>
<body>
<main>
<h1 id="heading">Signing in…</h1>
<p id="message" role="status">One moment.</p>
<button id="sign-out" type="button" hidden>Sign out</button>
</main>
<noscript>Signing in needs JavaScript.</noscript>
<script src="${SCRIPT_PATH}"></script>
</body>
</html>
`;

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};

export function mountLoginPage(app: Hono<AppEnv>): void {
  app.get(LOGIN_PAGE_PATH, (c) => c.html(PAGE, 200, SECURITY_HEADERS));
  app.get(SCRIPT_PATH, (c) => c.body(SCRIPT, 200, { ...SECURITY_HEADERS, 'content-type': 'text/javascript; charset=utf-8' }));
}
