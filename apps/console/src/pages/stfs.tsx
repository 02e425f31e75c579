import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { navigate, sectionPath } from '../router.js';
import type { SectionProps, Workspace } from '../sections.js';
import { api } from '../session.js';
import { CodeEditor } from '../ui/editor.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { Code, Facts, Json, Status, duration, fromBase64, parseJson, scoped, toBase64 } from './workflows/shared.js';
import './stfs.css';

type StfVersion = View<'StfVersion'>;
type RunAnswer = View<'RunAnswer'>;
type Mapping = View<'EffectVersion'>['header_mappings'][number];

/**
 * STFs and effects (docs/stfs.md, docs/effects.md): the STFs with the code editor, their versions (an old one
 * viewed as it was), their secrets by name only (a value is written, never read), instant runs with their output,
 * logs and time; the effects with the HTTP call each version makes.
 */
export default function Page({ workspace, rest }: SectionProps) {
  const [first, second, third] = rest;
  return (
    <div class="auto stfs">
      <h1>STFs and effects</h1>
      {!first ? (
        <Lists workspace={workspace} />
      ) : first === 'effects' && second ? (
        <EffectView key={second} workspace={workspace} effectId={second} />
      ) : second === 'versions' && third ? (
        <VersionView key={third} workspace={workspace} stfId={first} versionId={third} />
      ) : (
        <StfView key={first} workspace={workspace} stfId={first} />
      )}
    </div>
  );
}

const STARTER = "// $input is the run's input; sql(query) runs SQL as the STF; $env holds its secrets.\nconsole.log('input', $input);\nreturn $input;\n";

function Lists({ workspace }: { workspace: Workspace }) {
  const header = scoped(workspace.id);
  const stfs = useLoad(() => ok(api.value.GET('/api/v1/stfs', { params: { header, query: { limit: 500 } } })), [workspace.id]);
  const effects = useLoad(() => ok(api.value.GET('/api/v1/effects', { params: { header, query: { limit: 500 } } })), [workspace.id]);
  const name = useSignal('');
  const failed = useSignal<unknown>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    failed.value = null;
    try {
      const s = await ok(api.value.POST('/api/v1/stfs', { params: { header }, body: { name: name.value.trim(), version: '1', runtime: 'javascript', code: toBase64(STARTER) } }));
      navigate(sectionPath(workspace.id, 'stfs', s.id));
    } catch (err) {
      failed.value = err;
    }
  };
  return (
    <>
      <section aria-labelledby="stfs-h">
        <h2 id="stfs-h">STFs</h2>
        <Problem error={stfs.error.value} />
        {stfs.data.value === null ? (
          !stfs.error.value && <p role="status">Loading…</p>
        ) : stfs.data.value.length === 0 ? (
          <p>No STFs yet.</p>
        ) : (
          <div class="scroll">
            <table>
              <caption>STFs ({stfs.data.value.length})</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Newest version</th>
                  <th scope="col">Runtime</th>
                  <th scope="col">Description</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {stfs.data.value.map((s) => (
                  <tr key={s.id}>
                    <td class="text" dir="auto">
                      <Link to={sectionPath(workspace.id, 'stfs', s.id)}>{s.name}</Link>
                    </td>
                    <td class="text">{s.latest_version?.version ?? ''}</td>
                    <td>{s.latest_version?.runtime ?? ''}</td>
                    <td class="text" dir="auto">
                      {s.description ?? ''}
                    </td>
                    <td>{when(s.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <form class="row" onSubmit={create}>
          <label for="new-stf">New STF's name</label>
          <input id="new-stf" value={name.value} required maxLength={255} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
          <button type="submit">Create the STF</button>
        </form>
        <Problem error={failed.value} />
      </section>
      <section aria-labelledby="effects-h">
        <h2 id="effects-h">Effects</h2>
        <Problem error={effects.error.value} />
        {effects.data.value === null ? (
          !effects.error.value && <p role="status">Loading…</p>
        ) : effects.data.value.length === 0 ? (
          <p>No effects yet (create them through the API: docs/effects.md).</p>
        ) : (
          <div class="scroll">
            <table>
              <caption>Effects ({effects.data.value.length})</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Newest version</th>
                  <th scope="col">Call</th>
                  <th scope="col">Description</th>
                </tr>
              </thead>
              <tbody>
                {effects.data.value.map((x) => (
                  <tr key={x.id}>
                    <td class="text" dir="auto">
                      <Link to={sectionPath(workspace.id, 'stfs', 'effects', x.id)}>{x.name}</Link>
                    </td>
                    <td class="text">{x.latest_version?.version ?? ''}</td>
                    <td class="text" dir="auto">
                      {x.latest_version ? `${x.latest_version.method} ${x.latest_version.url}` : ''}
                    </td>
                    <td class="text" dir="auto">
                      {x.description ?? ''}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </>
  );
}

/** The label after `v`: 3 → 4, 1.2 → 1.3, beta → beta.1. */
export const nextLabel = (v: string | undefined): string => {
  if (!v) return '1';
  const m = /^(.*?)(\d+)$/.exec(v);
  return m ? `${m[1]}${Number(m[2]) + 1}` : `${v}.1`;
};

function StfView({ workspace, stfId }: { workspace: Workspace; stfId: string }) {
  const header = scoped(workspace.id);
  const stf = useLoad(() => ok(api.value.GET('/api/v1/stfs/{stfId}', { params: { header, path: { stfId } } })), [stfId]);
  const versions = useLoad(() => ok(api.value.GET('/api/v1/stfs/{stfId}/versions', { params: { header, path: { stfId }, query: { limit: 200 } } })), [stfId]);
  const code = useSignal('');
  const label = useSignal('');
  const saving = useSignal(false);
  const saveFailed = useSignal<unknown>(null);
  const saved = useSignal('');
  // Ctrl/Cmd+Enter in the editor runs its code (unsaved) in the instant run below.
  const runAsked = useSignal(0);
  const newest = versions.data.value?.[0];
  // The editor starts from the newest version's code, and its label suggests the next one; it is shown once that
  // code is in (the editor takes its first value when it is made).
  const ready = useSignal<string | null>(null);
  useEffect(() => {
    if (!versions.data.value) return;
    code.value = newest?.runtime === 'javascript' ? fromBase64(newest.code) : newest ? '' : STARTER;
    label.value = nextLabel(newest?.version);
    ready.value = newest?.id ?? '';
  }, [versions.data.value === null, newest?.id]);

  const save = async (e: Event) => {
    e.preventDefault();
    saving.value = true;
    saveFailed.value = null;
    saved.value = '';
    try {
      const v = await ok(api.value.POST('/api/v1/stfs/{stfId}/versions', { params: { header, path: { stfId } }, body: { version: label.value.trim(), runtime: 'javascript', code: toBase64(code.value) } }));
      saved.value = `Saved as version ${v.version}.`;
      await Promise.all([versions.reload(), stf.reload()]);
    } catch (err) {
      saveFailed.value = err;
    } finally {
      saving.value = false;
    }
  };

  const s = stf.data.value;
  const javascript = !newest || newest.runtime === 'javascript';
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'stfs')}>All STFs and effects</Link>
      </p>
      <Problem error={stf.error.value} />
      {s === null ? (
        !stf.error.value && <p role="status">Loading…</p>
      ) : (
        <>
          <h2 dir="auto">STF: {s.name}</h2>
          {s.description && <p dir="auto">{s.description}</p>}
          <Facts
            label="The STF"
            items={[
              ['Newest version', s.latest_version ? `${s.latest_version.version} (${s.latest_version.runtime})` : 'none'],
              ['Public', s.is_public ? 'yes' : 'no'],
              ['Created', when(s.created_at)],
              ['Updated', when(s.updated_at)],
            ]}
          />
          <section aria-labelledby="code-h">
            <h3 id="code-h">Code</h3>
            {ready.value === null ? (
              <p role="status">Loading…</p>
            ) : javascript ? (
              <form class="stack" onSubmit={save}>
                <CodeEditor language="javascript" label={`Code of ${s.name}`} value={code.value} onChange={(v) => (code.value = v)} onRun={() => (runAsked.value += 1)} />
                <p class="muted">Ctrl+Enter (⌘+Enter) runs the editor's code in the instant run below, unsaved.</p>
                <div class="row">
                  <label for="version-label">New version's label</label>
                  <input id="version-label" value={label.value} required maxLength={100} onInput={(e) => (label.value = (e.target as HTMLInputElement).value)} />
                  <button type="submit" class="primary" disabled={saving.value}>
                    Save as a new version
                  </button>
                </div>
                {saved.value && <p role="status">{saved.value}</p>}
                <Problem error={saveFailed.value} label="The version was not saved" />
              </form>
            ) : (
              <p>This STF runs the {newest?.runtime} runtime: its versions are added through the API (docs/stfs.md); the newest is shown under Versions.</p>
            )}
          </section>
          <InstantRun workspace={workspace} newest={newest} code={javascript ? code.value : null} runAsked={runAsked.value} />
          <Versions workspace={workspace} stfId={stfId} versions={versions.data.value} error={versions.error.value} />
          <Secrets workspace={workspace} stfId={stfId} />
        </>
      )}
    </>
  );
}

function InstantRun({ workspace, newest, code, runAsked }: { workspace: Workspace; newest: StfVersion | undefined; code: string | null; runAsked: number }) {
  const input = useSignal('{}');
  const busy = useSignal(false);
  const failed = useSignal<unknown>(null);
  const answer = useSignal<{ what: string; r: RunAnswer } | null>(null);
  const run = async (saved: boolean) => {
    failed.value = null;
    answer.value = null;
    let value: unknown;
    try {
      value = parseJson(input.value, 'The input');
    } catch (err) {
      failed.value = err;
      return;
    }
    busy.value = true;
    try {
      const body = saved ? { stf_version_id: newest?.id as string, input: value } : { runtime: 'javascript' as const, code: toBase64(code ?? ''), input: value };
      const r = await ok(api.value.POST('/api/v1/stfs/instant-run', { params: { header: scoped(workspace.id) }, body }));
      answer.value = { what: saved ? `version ${newest?.version}` : 'the code in the editor (unsaved)', r };
    } catch (err) {
      failed.value = err;
    } finally {
      busy.value = false;
    }
  };
  useEffect(() => {
    if (runAsked > 0 && code !== null) run(false);
  }, [runAsked]);
  const a = answer.value;
  return (
    <section aria-labelledby="run-h">
      <h3 id="run-h">Instant run</h3>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          run(true);
        }}
      >
        <label for="run-input">Input (JSON, the run's $input)</label>
        <textarea id="run-input" rows={4} spellcheck={false} value={input.value} onInput={(e) => (input.value = (e.target as HTMLTextAreaElement).value)} />
        <div class="row">
          <button type="submit" class="primary" disabled={busy.value || !newest}>
            Run the newest saved version
          </button>
          {code !== null && (
            <button type="button" disabled={busy.value} onClick={() => run(false)}>
              Run the editor's code (unsaved, without secrets)
            </button>
          )}
        </div>
      </form>
      {busy.value && <p role="status">Running…</p>}
      <Problem error={failed.value} label="The run could not be made" />
      {a && (
        <div class="run-answer" role="status">
          <p>
            Ran {a.what}: <Status value={a.r.success ? 'succeeded' : 'failed'} />
            {a.r.success && ` in ${duration(a.r.duration_ms)}`}
          </p>
          {a.r.success ? (
            <>
              <h4>Output</h4>
              <Json value={a.r.output} label="The run's output" />
            </>
          ) : (
            <div class="problem">
              <strong>{a.r.error.kind}</strong> {a.r.error.message}
              {a.r.error.details && <pre class="details">{a.r.error.details}</pre>}
            </div>
          )}
          <h4>Logs</h4>
          {a.r.logs.length === 0 ? (
            <p class="muted">Nothing was logged.</p>
          ) : (
            <ol class="logs" aria-label="The run's logs">
              {a.r.logs.map((l, i) => (
                <li key={i} class={`log-${l.level}`}>
                  <span class="level">{l.level}</span> <span dir="auto">{l.message}</span>
                </li>
              ))}
            </ol>
          )}
        </div>
      )}
    </section>
  );
}

function Versions({ workspace, stfId, versions, error }: { workspace: Workspace; stfId: string; versions: StfVersion[] | null; error: unknown }) {
  return (
    <section aria-labelledby="versions-h">
      <h3 id="versions-h">Versions</h3>
      <Problem error={error} />
      {versions && (
        <div class="scroll">
          <table>
            <caption>Versions, newest first ({versions.length})</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Runtime</th>
                <th scope="col">Saved</th>
                <th scope="col">Code</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.id}>
                  <td class="text">{v.version}</td>
                  <td>{v.runtime}</td>
                  <td>{when(v.created_at)}</td>
                  <td>
                    <Link to={sectionPath(workspace.id, 'stfs', stfId, 'versions', v.id)}>{`View version ${v.version}`}</Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function Secrets({ workspace, stfId }: { workspace: Workspace; stfId: string }) {
  const header = scoped(workspace.id);
  const list = useLoad(() => ok(api.value.GET('/api/v1/stfs/{stfId}/secrets', { params: { header, path: { stfId } } })), [stfId]);
  const key = useSignal('');
  const value = useSignal('');
  const failed = useSignal<unknown>(null);
  const said = useSignal('');
  const act = async (f: () => Promise<unknown>, done: string) => {
    failed.value = null;
    said.value = '';
    try {
      await f();
      await list.reload();
      said.value = done;
    } catch (err) {
      failed.value = err;
    }
  };
  return (
    <section aria-labelledby="secrets-h">
      <h3 id="secrets-h">Secrets</h3>
      <p class="muted">An STF reads its secrets as $env. Values are sealed and never shown again, here or anywhere.</p>
      <Problem error={list.error.value} />
      <Problem error={failed.value} />
      {said.value && <p role="status">{said.value}</p>}
      {list.data.value && list.data.value.length === 0 && <p>No secrets.</p>}
      {list.data.value && list.data.value.length > 0 && (
        <table>
          <caption>Secret names</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Set</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.data.value.map((s) => (
              <tr key={s.env_key}>
                <td class="text">{s.env_key}</td>
                <td>{when(s.updated_at)}</td>
                <td>
                  <button
                    type="button"
                    class="danger"
                    onClick={() => act(() => ok(api.value.DELETE('/api/v1/stfs/{stfId}/secrets/{envKey}', { params: { header, path: { stfId, envKey: s.env_key } } })), `Deleted ${s.env_key}.`)}
                  >
                    Delete {s.env_key}
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          const env_key = key.value.trim();
          const secret = value.value;
          // The value leaves the page at once: only the service keeps it.
          value.value = '';
          act(() => ok(api.value.POST('/api/v1/stfs/{stfId}/secrets', { params: { header, path: { stfId } }, body: { env_key, value: secret } })), `Set ${env_key}.`).then(() => {
            if (!failed.value) key.value = '';
          });
        }}
      >
        <label for="secret-name">Secret name</label>
        <input id="secret-name" value={key.value} required pattern="[A-Za-z_][A-Za-z0-9_]*" onInput={(e) => (key.value = (e.target as HTMLInputElement).value)} />
        <label for="secret-value">Value</label>
        <input id="secret-value" type="password" autocomplete="off" value={value.value} required onInput={(e) => (value.value = (e.target as HTMLInputElement).value)} />
        <button type="submit">Set the secret</button>
      </form>
    </section>
  );
}

function VersionView({ workspace, stfId, versionId }: { workspace: Workspace; stfId: string; versionId: string }) {
  const header = scoped(workspace.id);
  const stf = useLoad(() => ok(api.value.GET('/api/v1/stfs/{stfId}', { params: { header, path: { stfId } } })), [stfId]);
  const versions = useLoad(() => ok(api.value.GET('/api/v1/stfs/{stfId}/versions', { params: { header, path: { stfId }, query: { limit: 200 } } })), [stfId]);
  const v = versions.data.value?.find((x) => x.id === versionId);
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'stfs', stfId)}>{stf.data.value ? `Back to the STF ${stf.data.value.name}` : 'Back to the STF'}</Link>
      </p>
      <Problem error={stf.error.value ?? versions.error.value} />
      {versions.data.value && !v && <p>There is no such version of this STF.</p>}
      {v && (
        <>
          <h2 dir="auto">
            {stf.data.value?.name ?? 'STF'}, version {v.version}
          </h2>
          <Facts
            label="The version"
            items={[
              ['Runtime', v.runtime],
              ['Saved', when(v.created_at)],
              ['Newest', versions.data.value?.[0]?.id === v.id ? 'yes' : 'no, a later version exists'],
            ]}
          />
          <h3>Code</h3>
          {v.runtime === 'wasm' ? <p>A WebAssembly module ({Math.round((v.code.length * 3) / 4)} bytes).</p> : <Code text={fromBase64(v.code)} label={`Code of version ${v.version}`} />}
          <h3>Input schema</h3>
          <Json value={v.input_schema} label="Input schema" />
          <h3>Output schema</h3>
          <Json value={v.output_schema} label="Output schema" />
        </>
      )}
    </>
  );
}

function Mappings({ caption, items }: { caption: string; items: Mapping[] }) {
  if (items.length === 0) return <p class="muted">{caption}: none.</p>;
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">Target</th>
          <th scope="col">From</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        {items.map((m, i) => (
          <tr key={i}>
            <td class="text" dir="auto">
              {m.target}
            </td>
            <td>{m.source.type === 'Variable' ? 'the input' : 'a constant'}</td>
            <td class="text" dir="auto">
              {m.source.type === 'Variable' ? m.source.value : JSON.stringify(m.source.value)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function EffectView({ workspace, effectId }: { workspace: Workspace; effectId: string }) {
  const header = scoped(workspace.id);
  const effect = useLoad(() => ok(api.value.GET('/api/v1/effects/{effectId}', { params: { header, path: { effectId } } })), [effectId]);
  const versions = useLoad(() => ok(api.value.GET('/api/v1/effects/{effectId}/versions', { params: { header, path: { effectId }, query: { limit: 200 } } })), [effectId]);
  const e = effect.data.value;
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'stfs')}>All STFs and effects</Link>
      </p>
      <Problem error={effect.error.value ?? versions.error.value} />
      {e && (
        <>
          <h2 dir="auto">Effect: {e.name}</h2>
          {e.description && <p dir="auto">{e.description}</p>}
          <p class="muted">Each version is one HTTP call definition; a new URL, method or mapping is a new version. Mapping values are readable by every member.</p>
          {(versions.data.value ?? []).map((v, i) => (
            <section key={v.id} aria-label={`Version ${v.version}`}>
              <h3>
                Version {v.version}
                {i === 0 ? ' (newest)' : ''}
              </h3>
              <Facts
                label={`Version ${v.version}`}
                items={[
                  ['Call', `${v.method} ${v.url}`],
                  ['Timeout', v.timeout_secs === null ? 'the default, 30 s' : `${v.timeout_secs} s`],
                  ['Retries', String(v.retries)],
                  ['Saved', when(v.created_at)],
                ]}
              />
              <Mappings caption={`Headers of version ${v.version}`} items={v.header_mappings} />
              <Mappings caption={`Query parameters of version ${v.version}`} items={v.query_mappings} />
              <Mappings caption={`Body of version ${v.version}`} items={v.body_mappings} />
              {v.input_schema !== null && (
                <details>
                  <summary>Input schema of version {v.version}</summary>
                  <Json value={v.input_schema} label="Input schema" />
                </details>
              )}
            </section>
          ))}
        </>
      )}
    </>
  );
}
