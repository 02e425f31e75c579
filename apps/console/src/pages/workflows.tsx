import { ApiError, type View, ok, type paths } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { navigate, sectionPath } from '../router.js';
import type { SectionProps, Workspace } from '../sections.js';
import { api } from '../session.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { Automation } from './workflows/automation.js';
import { Facts, Json, Status, duration, parseJson, pretty, raw, scoped, useMembers } from './workflows/shared.js';
import './workflows.css';

type Workflow = View<'Workflow'>;
type Run = View<'WorkflowRun'>;
type RunStatus = Run['status'];
type Trigger = Run['trigger'];
type WorkflowBody = paths['/api/v1/workflows']['post']['requestBody'] extends { content: { 'application/json': infer B } } | undefined ? B : never;

/**
 * Workflows and runs (docs/workflows.md, docs/automation.md): the definitions, executing one with a JSON input
 * (waiting or queued), its runs with the list's filters, a run's timeline step by step with what each step was given
 * and made, cancel and re-run; its schedules, webhooks and triggers with their events.
 */
export default function Page({ workspace, rest }: SectionProps) {
  const [wfId, what, runId] = rest;
  return (
    <div class="auto workflows">
      <h1>Workflows and runs</h1>
      {!wfId ? (
        <WorkflowList workspace={workspace} />
      ) : what === 'runs' && runId ? (
        <RunView key={runId} workspace={workspace} wfId={wfId} runId={runId} />
      ) : (
        <WorkflowView key={wfId} workspace={workspace} wfId={wfId} />
      )}
    </div>
  );
}

const TEMPLATE = pretty({ name: 'new workflow', description: '', input_steps: [], stf_steps: [{ stf_version_id: '<an STF version id>', input_mappings: [] }], effect_steps: [] });

function WorkflowList({ workspace }: { workspace: Workspace }) {
  const header = scoped(workspace.id);
  const items = useLoad(() => ok(api.value.GET('/api/v1/workflows', { params: { header, query: { limit: 500 } } })), [workspace.id]);
  const definition = useSignal(TEMPLATE);
  const failed = useSignal<unknown>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    failed.value = null;
    try {
      const body = parseJson(definition.value, 'The definition') as WorkflowBody;
      const wf = await ok(api.value.POST('/api/v1/workflows', { params: { header }, body }));
      navigate(sectionPath(workspace.id, 'workflows', wf.id));
    } catch (err) {
      failed.value = err;
    }
  };
  const list = items.data.value;
  return (
    <>
      <h2>Definitions</h2>
      <Problem error={items.error.value} />
      {list === null ? (
        !items.error.value && <p role="status">Loading…</p>
      ) : list.length === 0 ? (
        <p>No workflows yet.</p>
      ) : (
        <div class="scroll">
          <table>
            <caption>Workflows ({list.length})</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Description</th>
                <th scope="col">Steps</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id}>
                  <td class="text" dir="auto">
                    <Link to={sectionPath(workspace.id, 'workflows', w.id)}>{w.name}</Link>
                  </td>
                  <td class="text" dir="auto">
                    {w.description ?? ''}
                  </td>
                  <td>
                    {w.input_steps.length} input, {w.stf_steps.length} STF, {w.effect_steps.length} effect
                  </td>
                  <td>{when(w.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <details>
        <summary>New workflow from JSON</summary>
        <form class="stack" onSubmit={create}>
          <label for="new-workflow">Definition (JSON, as docs/workflows.md describes it)</label>
          <textarea id="new-workflow" rows={10} spellcheck={false} value={definition.value} onInput={(e) => (definition.value = (e.target as HTMLTextAreaElement).value)} />
          <Problem error={failed.value} />
          <button type="submit">Create the workflow</button>
        </form>
      </details>
    </>
  );
}

/** STF and effect names (and version labels) by id, for steps and run records. */
function useNames(workspaceId: string) {
  const header = scoped(workspaceId);
  return useLoad(async () => {
    const [stfs, effects] = await Promise.all([
      ok(api.value.GET('/api/v1/stfs', { params: { header, query: { limit: 500 } } })).catch(() => []),
      ok(api.value.GET('/api/v1/effects', { params: { header, query: { limit: 500 } } })).catch(() => []),
    ]);
    const stf = new Map(stfs.map((s) => [s.id, s.name]));
    const effect = new Map(effects.map((x) => [x.id, x.name]));
    // Version id → "STF name, version label" (steps name versions only).
    const versions = new Map<string, string>();
    await Promise.all([
      ...stfs.slice(0, 100).map((s) =>
        ok(api.value.GET('/api/v1/stfs/{stfId}/versions', { params: { header, path: { stfId: s.id }, query: { limit: 100 } } })).then(
          (vs) => {
            for (const v of vs) versions.set(v.id, `STF ${s.name}, version ${v.version}`);
          },
          () => undefined,
        ),
      ),
      ...effects.slice(0, 100).map((x) =>
        ok(api.value.GET('/api/v1/effects/{effectId}/versions', { params: { header, path: { effectId: x.id }, query: { limit: 100 } } })).then(
          (vs) => {
            for (const v of vs) versions.set(v.id, `effect ${x.name}, version ${v.version} (${v.method} ${v.url})`);
          },
          () => undefined,
        ),
      ),
    ]);
    return { stf, effect, versions };
  }, [workspaceId]);
}

function WorkflowView({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  const header = scoped(workspace.id);
  const wf = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}', { params: { header, path: { workflowId: wfId } } })), [wfId]);
  const names = useNames(workspace.id);
  const runsKey = useSignal(0);
  const w = wf.data.value;
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'workflows')}>All workflows</Link>
      </p>
      <Problem error={wf.error.value} />
      {w === null ? (
        !wf.error.value && <p role="status">Loading…</p>
      ) : (
        <>
          <h2 dir="auto">Workflow: {w.name}</h2>
          {w.description && <p dir="auto">{w.description}</p>}
          <Facts
            label="The workflow"
            items={[
              ['Steps', `${w.input_steps.length} input, ${w.stf_steps.length} STF, ${w.effect_steps.length} effect`],
              ['Anonymous execute', w.allow_anonymous_execute ? 'allowed' : 'not allowed'],
              ['Created', when(w.created_at)],
              ['Updated', when(w.updated_at)],
            ]}
          />
          <Steps w={w} versions={names.data.value?.versions ?? new Map()} />
          <details>
            <summary>The definition as JSON</summary>
            <Json value={w} label="The workflow definition" />
          </details>
          <Execute workspace={workspace} wfId={wfId} onRun={() => (runsKey.value += 1)} />
          <Runs key={runsKey.value} workspace={workspace} wfId={wfId} />
          <Automation workspace={workspace} wfId={wfId} />
        </>
      )}
    </>
  );
}

function Steps({ w, versions }: { w: Workflow; versions: Map<string, string> }) {
  const rows: { key: string; kind: string; what: string; mappings: string; pinned: string }[] = [
    ...w.input_steps.map((s, i) => ({
      key: `i${i}`,
      kind: `input ${i}`,
      what: `${s.name}: ${s.source.type} ${'name' in s.source ? s.source.name : 'id' in s.source ? s.source.id : `${s.source.method ?? 'GET'} ${s.source.url}`}`,
      mappings: '',
      pinned: '',
    })),
    ...w.stf_steps.map((s, i) => ({
      key: `s${i}`,
      kind: `STF ${i}`,
      what: versions.get(s.stf_version_id) ?? s.stf_version_id,
      mappings: s.input_mappings.length ? JSON.stringify(s.input_mappings) : 'the previous output',
      pinned: s.pin_version ? 'pinned' : 'newest accepted',
    })),
    ...w.effect_steps.map((s, i) => ({
      key: `e${i}`,
      kind: `effect ${i}`,
      what: versions.get(s.effect_version_id) ?? s.effect_version_id,
      mappings: s.input_mappings.length ? JSON.stringify(s.input_mappings) : 'the result',
      pinned: s.pin_version ? 'pinned' : 'newest accepted',
    })),
  ];
  return (
    <div class="scroll">
      <table>
        <caption>Steps</caption>
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">What</th>
            <th scope="col">Input</th>
            <th scope="col">Version</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.key}>
              <td>{r.kind}</td>
              <td class="text" dir="auto">
                {r.what}
              </td>
              <td class="text" dir="auto">
                {r.mappings}
              </td>
              <td>{r.pinned}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The run id a failed execute or rerun names in its details (`{ run_id, step, kind, … }`). */
const runIdOfError = (err: unknown): string | null => {
  if (!(err instanceof ApiError) || !err.details) return null;
  try {
    const d = JSON.parse(err.details) as { run_id?: unknown };
    return typeof d.run_id === 'string' ? d.run_id : null;
  } catch {
    return null;
  }
};

function Execute({ workspace, wfId, onRun }: { workspace: Workspace; wfId: string; onRun: () => void }) {
  const input = useSignal('{}');
  const background = useSignal(false);
  const busy = useSignal(false);
  const failed = useSignal<unknown>(null);
  const result = useSignal<{ runId: string | null; queued: boolean; output: unknown } | null>(null);
  const run = async (e: Event) => {
    e.preventDefault();
    failed.value = null;
    result.value = null;
    let body: unknown;
    try {
      body = parseJson(input.value, 'The input');
    } catch (err) {
      failed.value = err;
      return;
    }
    busy.value = true;
    try {
      const r = await raw(
        api.value.POST('/api/v1/workflows/{workflowId}/execute', {
          params: { header: scoped(workspace.id), path: { workflowId: wfId }, ...(background.value ? { query: { async: true } } : {}) },
          body,
        }),
      );
      result.value = { runId: r.response.headers.get('x-workflow-run-id'), queued: r.response.status === 202, output: r.data };
    } catch (err) {
      failed.value = err;
      const id = runIdOfError(err);
      if (id) result.value = { runId: id, queued: false, output: undefined };
    } finally {
      busy.value = false;
      onRun();
    }
  };
  const res = result.value;
  return (
    <section aria-labelledby="execute-h">
      <h2 id="execute-h">Execute</h2>
      <form class="stack" onSubmit={run}>
        <label for="execute-input">Input (JSON, the run's $input)</label>
        <textarea id="execute-input" rows={5} spellcheck={false} value={input.value} onInput={(e) => (input.value = (e.target as HTMLTextAreaElement).value)} />
        <div class="row">
          <label class="check">
            <input type="checkbox" checked={background.value} onChange={(e) => (background.value = (e.target as HTMLInputElement).checked)} />
            Run in the background (async: answer at once, the run is queued)
          </label>
          <button type="submit" class="primary" disabled={busy.value}>
            Execute
          </button>
        </div>
      </form>
      {busy.value && <p role="status">Running…</p>}
      <Problem error={failed.value} label="The execution failed" />
      {res && (
        <div role="status">
          <p>
            {res.queued ? 'Queued as ' : failed.value ? 'Recorded as ' : 'Succeeded: '}
            {res.runId ? <Link to={sectionPath(workspace.id, 'workflows', wfId, 'runs', res.runId)}>{`run ${res.runId}`}</Link> : 'a run'}
          </p>
          {!res.queued && res.output !== undefined && (
            <>
              <h3>Output</h3>
              <Json value={res.output} label="The output of the execution" />
            </>
          )}
        </div>
      )}
    </section>
  );
}

const RUN_STATUSES: RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const TRIGGERS: Trigger[] = ['request', 'async', 'schedule', 'webhook', 'event'];
const PAGE = 25;

function Runs({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  const status = useSignal<'' | RunStatus>('');
  const trigger = useSignal<'' | Trigger>('');
  const triggerId = useSignal('');
  const offset = useSignal(0);
  const runs = useLoad(
    () =>
      ok(
        api.value.GET('/api/v1/workflows/{workflowId}/runs', {
          params: {
            header: scoped(workspace.id),
            path: { workflowId: wfId },
            query: {
              limit: PAGE,
              offset: offset.value,
              ...(status.value ? { status: status.value } : {}),
              ...(trigger.value ? { trigger: trigger.value } : {}),
              ...(triggerId.value.trim() ? { trigger_id: triggerId.value.trim() } : {}),
            },
          },
        }),
      ),
    [wfId, status.value, trigger.value, triggerId.value, offset.value],
  );
  const list = runs.data.value;
  return (
    <section aria-labelledby="runs-h">
      <h2 id="runs-h">Runs</h2>
      <div class="row">
        <label for="runs-status">Status</label>
        <select
          id="runs-status"
          value={status.value}
          onChange={(e) => {
            status.value = (e.target as HTMLSelectElement).value as RunStatus;
            offset.value = 0;
          }}
        >
          <option value="">any</option>
          {RUN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label for="runs-trigger">Started by</label>
        <select
          id="runs-trigger"
          value={trigger.value}
          onChange={(e) => {
            trigger.value = (e.target as HTMLSelectElement).value as Trigger;
            offset.value = 0;
          }}
        >
          <option value="">anything</option>
          {TRIGGERS.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <label for="runs-trigger-id">Schedule, hook or trigger id</label>
        <input
          id="runs-trigger-id"
          value={triggerId.value}
          onChange={(e) => {
            triggerId.value = (e.target as HTMLInputElement).value;
            offset.value = 0;
          }}
        />
        <button type="button" onClick={() => runs.reload()}>
          Refresh runs
        </button>
      </div>
      <Problem error={runs.error.value} />
      {list === null ? (
        !runs.error.value && <p role="status">Loading…</p>
      ) : list.length === 0 ? (
        <p>No runs{status.value || trigger.value || triggerId.value ? ' match these filters' : ' yet'}.</p>
      ) : (
        <div class="scroll">
          <table>
            <caption>Runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col">Started by</th>
                <th scope="col">Started</th>
                <th scope="col">Duration</th>
                <th scope="col">Attempts</th>
                <th scope="col">Re-run of</th>
              </tr>
            </thead>
            <tbody>
              {list.map((r) => (
                <tr key={r.id}>
                  <td>
                    <Link to={sectionPath(workspace.id, 'workflows', wfId, 'runs', r.id)}>{`Run ${r.id.slice(0, 8)}`}</Link>
                  </td>
                  <td>
                    <Status value={r.status} />
                  </td>
                  <td>{r.trigger}</td>
                  <td>{when(r.started_at)}</td>
                  <td>{duration(r.duration_ms)}</td>
                  <td>{r.attempts}</td>
                  <td>{r.rerun_of ? <Link to={sectionPath(workspace.id, 'workflows', wfId, 'runs', r.rerun_of)}>{`Run ${r.rerun_of.slice(0, 8)}`}</Link> : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <nav class="row" aria-label="Pages of the runs">
        <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE))}>
          Newer runs
        </button>
        <button type="button" disabled={(list?.length ?? 0) < PAGE} onClick={() => (offset.value += PAGE)}>
          Older runs
        </button>
      </nav>
    </section>
  );
}

type StepRecord = Run['steps'][number];

function stepName(s: StepRecord, names: { stf: Map<string, string>; effect: Map<string, string> } | null): string {
  const v = s.version ? `, version ${s.version}` : '';
  if (s.kind === 'input') return `Input ${s.index}: ${s.name ?? ''}`;
  if (s.kind === 'stf') return `STF step ${s.index}: ${(s.stf_id && names?.stf.get(s.stf_id)) ?? s.stf_id ?? ''}${v}`;
  return `Effect step ${s.index}: ${(s.effect_id && names?.effect.get(s.effect_id)) ?? s.effect_id ?? ''}${v}`;
}

function RunView({ workspace, wfId, runId }: { workspace: Workspace; wfId: string; runId: string }) {
  const header = scoped(workspace.id);
  const path = { workflowId: wfId, runId };
  const run = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}/runs/{runId}', { params: { header, path } })), [runId]);
  const wf = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}', { params: { header, path: { workflowId: wfId } } })), [wfId]);
  const names = useNames(workspace.id);
  const who = useMembers(workspace.id);
  const busy = useSignal(false);
  const failed = useSignal<unknown>(null);
  const said = useSignal('');
  const r = run.data.value;
  const going = r?.status === 'queued' || r?.status === 'running';
  // A run that goes on is read again every second until it ends.
  useEffect(() => {
    if (!going) return;
    const t = setTimeout(() => run.reload(), 1000);
    return () => clearTimeout(t);
  }, [going, r]);

  const cancel = async () => {
    busy.value = true;
    failed.value = null;
    try {
      run.data.value = await ok(api.value.POST('/api/v1/workflows/{workflowId}/runs/{runId}/cancel', { params: { header, path } }));
      said.value = 'Asked to cancel the run.';
    } catch (err) {
      failed.value = err;
    } finally {
      busy.value = false;
    }
  };
  const rerun = async () => {
    busy.value = true;
    failed.value = null;
    let next: string | null = null;
    try {
      const res = await raw(api.value.POST('/api/v1/workflows/{workflowId}/runs/{runId}/rerun', { params: { header, path } }));
      next = res.response.headers.get('x-workflow-run-id');
    } catch (err) {
      next = runIdOfError(err);
      if (!next) failed.value = err;
    } finally {
      busy.value = false;
    }
    if (next) navigate(sectionPath(workspace.id, 'workflows', wfId, 'runs', next));
  };

  const longest = Math.max(1, ...(r?.steps ?? []).map((s) => s.duration_ms ?? 0));
  return (
    <>
      <p>
        <Link to={sectionPath(workspace.id, 'workflows', wfId)}>{wf.data.value ? `Back to the workflow ${wf.data.value.name}` : 'Back to the workflow'}</Link>
      </p>
      <Problem error={run.error.value} />
      {r === null ? (
        !run.error.value && <p role="status">Loading…</p>
      ) : (
        <>
          <h2>Run {r.id}</h2>
          <Facts
            label="The run"
            items={[
              ['Status', <Status key="s" value={r.status} />],
              ['Started by', `${r.trigger}${r.trigger_id ? ` ${r.trigger_id}` : ''}`],
              ['Executed by', r.executed_by ? who(r.executed_by) : 'anonymous'],
              ['Started', when(r.started_at)],
              ['Finished', r.finished_at ? when(r.finished_at) : going ? 'still going' : ''],
              ['Duration', duration(r.duration_ms)],
              ['Attempts', String(r.attempts)],
              ...(r.queued_at ? ([['Queued', when(r.queued_at)]] as [string, string][]) : []),
              ...(r.cancel_requested_at ? ([['Cancel asked', when(r.cancel_requested_at)]] as [string, string][]) : []),
              ...(r.rerun_of
                ? ([['Re-run of', <Link key="o" to={sectionPath(workspace.id, 'workflows', wfId, 'runs', r.rerun_of)}>{`Run ${r.rerun_of}`}</Link>]] as [string, preact.ComponentChildren][])
                : []),
            ]}
          />
          <div class="row">
            {going && (
              <button type="button" class="danger" disabled={busy.value} onClick={cancel}>
                Cancel the run
              </button>
            )}
            {!going && (
              <button type="button" disabled={busy.value} onClick={rerun}>
                Re-run with the same input
              </button>
            )}
            {going && (
              <span role="status" class="muted">
                The run goes on; this view follows it.
              </span>
            )}
          </div>
          {said.value && <p role="status">{said.value}</p>}
          <Problem error={failed.value} />
          {r.error && (
            <div role="alert" class="problem">
              <strong>{r.error.kind}</strong> in {r.error.step}: {r.error.message}
              {r.error.details && <pre class="details">{r.error.details}</pre>}
            </div>
          )}
          <section aria-labelledby="timeline-h">
            <h3 id="timeline-h">Timeline</h3>
            {r.steps.length === 0 ? (
              <p>No step has run.</p>
            ) : (
              <div class="scroll">
                <table class="timeline">
                  <caption>Steps of the run, in order</caption>
                  <thead>
                    <tr>
                      <th scope="col">Step</th>
                      <th scope="col">Status</th>
                      <th scope="col">Duration</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">HTTP status</th>
                      <th scope="col">Notes</th>
                    </tr>
                  </thead>
                  <tbody>
                    {r.steps.map((s) => (
                      <tr key={`${s.kind}${s.index}`}>
                        <th scope="row" class="text" dir="auto">
                          {stepName(s, names.data.value)}
                        </th>
                        <td>
                          <Status value={s.status} />
                        </td>
                        <td class="bar-cell">
                          <span class="track" aria-hidden="true">
                            <span class={`bar bar-${s.status}`} style={{ width: `${Math.max(2, ((s.duration_ms ?? 0) / longest) * 100)}%` }} />
                          </span>
                          <span>{s.duration_ms === undefined ? '' : duration(s.duration_ms)}</span>
                        </td>
                        <td>{s.attempts ?? (s.attempt ? `run attempt ${s.attempt}` : '')}</td>
                        <td>{s.status_code ?? ''}</td>
                        <td class="text" dir="auto">
                          {[
                            s.error ? `${s.error.kind}: ${s.error.message}` : '',
                            s.delivered !== undefined ? (s.delivered ? 'delivered' : 'not delivered') : '',
                            s.caller_rows ? 'read its user’s rows' : '',
                            ...(s.deprecations ?? []).map((d) => `${d.at}: write ${d.use} for ${d.found}`),
                          ]
                            .filter(Boolean)
                            .join('; ')}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {r.steps.map((s) => (
              <details key={`${s.kind}${s.index}`}>
                <summary dir="auto">Input and output of {stepName(s, names.data.value)}</summary>
                {s.input === null && s.output === null ? (
                  <p class="muted">Nothing recorded that you may see (a skipped step, a run older than step data, or rows only its user may read).</p>
                ) : (
                  <>
                    <h4>Input</h4>
                    <Json value={s.input} label={`Input of ${stepName(s, names.data.value)}`} />
                    <h4>Output</h4>
                    <Json value={s.output} label={`Output of ${stepName(s, names.data.value)}`} />
                  </>
                )}
                {s.idempotency_key && <p class="muted">Idempotency-Key: {s.idempotency_key}</p>}
              </details>
            ))}
          </section>
          <h3>Input of the run</h3>
          <Json value={r.input} label="The run's input" />
          <h3>Output of the run</h3>
          <Json value={r.output} label="The run's output" />
        </>
      )}
    </>
  );
}
