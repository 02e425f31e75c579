import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { api, token } from '../../session.js';
import { useLoad } from '../../ui/load.js';
import { Problem } from '../../ui/problem.js';
import { when } from '../../ui/values.js';

/**
 * The signed-in person's API keys (they act as that person in every workspace they belong to): the list, a new
 * key — its raw value shown once, to copy — and revoking one. The service manages keys only for a session sign-in.
 */
export function ApiKeys() {
  // Keys are managed with a session sign-in (a login link) only: an API key or a JWT is refused by the service.
  if (!token.value?.startsWith('ses_')) {
    return (
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">Your API keys</h2>
        <p>API keys are managed when you sign in with a login link; you signed in with a key or a token.</p>
      </section>
    );
  }
  return <ApiKeyList />;
}

function ApiKeyList() {
  const keys = useLoad(() => ok(api.value.GET('/api/v1/api-keys', { params: { query: { limit: 1000 } } })), []);
  const name = useSignal('');
  const expires = useSignal('');
  const created = useSignal<View<'ApiKeyCreated'> | null>(null);
  const status = useSignal('');
  const error = useSignal<unknown>(null);

  const create = async (e: Event) => {
    e.preventDefault();
    error.value = null;
    status.value = '';
    try {
      created.value = await ok(
        api.value.POST('/api/v1/api-keys', { body: { name: name.value.trim(), ...(expires.value ? { expires_at: new Date(expires.value).toISOString() } : {}) } }),
      );
      name.value = '';
      expires.value = '';
      await keys.reload();
    } catch (err) {
      error.value = err;
    }
  };
  const revoke = async (k: View<'ApiKey'>) => {
    error.value = null;
    try {
      await ok(api.value.DELETE('/api/v1/api-keys/{keyId}', { params: { path: { keyId: k.id } } }));
      if (created.value?.id === k.id) created.value = null;
      status.value = `The key ${k.name} was revoked.`;
      await keys.reload();
    } catch (err) {
      error.value = err;
    }
  };
  const copy = async () => {
    if (!created.value) return;
    try {
      await navigator.clipboard.writeText(created.value.key);
      status.value = 'The key was copied.';
    } catch {
      status.value = 'The browser did not allow copying: select the key and copy it yourself.';
    }
  };

  const list = keys.data.value ?? [];
  return (
    <section aria-labelledby="keys-heading">
      <h2 id="keys-heading">Your API keys</h2>
      <p>An API key acts as you, in every workspace you belong to. Give agents and programs a key of their own, and revoke it when it is no longer used.</p>
      <p role="status" class="value">
        {status.value}
      </p>
      <Problem error={keys.error.value} />
      <Problem error={error.value} label="API keys" />
      {created.value && (
        <div class="new-key">
          <label for="new-key-value">New key {created.value.name}: copy it now, it will not be shown again</label>
          <input id="new-key-value" readOnly value={created.value.key} onFocus={(e) => (e.target as HTMLInputElement).select()} />
          <button type="button" onClick={copy}>
            Copy the key
          </button>
          <button type="button" onClick={() => (created.value = null)}>
            I have saved it
          </button>
        </div>
      )}
      {list.length > 0 && (
        <div class="scroll">
          <table>
            <caption>API keys (only their first characters are kept for showing)</caption>
            <thead>
              <tr>
                <th scope="col" class="wrap">
                  Name
                </th>
                <th scope="col">Starts with</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((k) => (
                <tr key={k.id}>
                  <td class="wrap" dir="auto">
                    {k.name}
                  </td>
                  <td class="prefix">{k.prefix}…</td>
                  <td>{when(k.created_at)}</td>
                  <td>{k.expires_at ? when(k.expires_at) : 'never'}</td>
                  <td>{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
                  <td>
                    <button type="button" aria-label={`Revoke the key ${k.name}`} onClick={() => revoke(k)}>
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form class="row" onSubmit={create}>
        <span class="field">
          <label for="key-name">New key's name</label>
          <input id="key-name" required maxLength={255} value={name.value} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
        </span>
        <span class="field">
          <label for="key-expires">Expires (optional)</label>
          <input id="key-expires" type="datetime-local" value={expires.value} onInput={(e) => (expires.value = (e.target as HTMLInputElement).value)} />
        </span>
        <button type="submit">Create API key</button>
      </form>
    </section>
  );
}
