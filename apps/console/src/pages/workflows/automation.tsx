import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { sectionPath } from '../../router.js';
import type { Workspace } from '../../sections.js';
import { api } from '../../session.js';
import { Link } from '../../ui/link.js';
import { useLoad } from '../../ui/load.js';
import { Problem } from '../../ui/problem.js';
import { when } from '../../ui/values.js';
import { Json, Status, parseJson, scoped } from './shared.js';

type Event = View<'WorkflowEvent'>;
type TriggerKind = View<'WorkflowTrigger'>['event'];

/** A workflow's schedules, webhooks and triggers (docs/automation.md), each with its state; create, pause, delete. */
export function Automation({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  return (
    <section aria-labelledby="automation-h">
      <h2 id="automation-h">Schedules, webhooks and triggers</h2>
      <Schedules workspace={workspace} wfId={wfId} />
      <Hooks workspace={workspace} wfId={wfId} />
      <Triggers workspace={workspace} wfId={wfId} />
    </section>
  );
}

/** Runs an action, keeping its failure to show; reloads the list after. */
function useAction(reload: () => Promise<void>) {
  const failed = useSignal<unknown>(null);
  const act = async (f: () => Promise<unknown>) => {
    failed.value = null;
    try {
      await f();
      await reload();
      return true;
    } catch (err) {
      failed.value = err;
      return false;
    }
  };
  return { failed, act };
}

function Schedules({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  const header = scoped(workspace.id);
  const list = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}/schedules', { params: { header, path: { workflowId: wfId }, query: { limit: 200 } } })), [wfId]);
  const { failed, act } = useAction(list.reload);
  const cron = useSignal('0 9 * * 1-5');
  const timezone = useSignal('UTC');
  const input = useSignal('{}');
  const name = useSignal('');
  const path = (scheduleId: string) => ({ workflowId: wfId, scheduleId });
  return (
    <>
      <h3>Schedules</h3>
      <Problem error={list.error.value} />
      <Problem error={failed.value} />
      {list.data.value && list.data.value.length === 0 && <p>No schedules.</p>}
      {list.data.value && list.data.value.length > 0 && (
        <div class="scroll">
          <table>
            <caption>Schedules of this workflow</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Cron</th>
                <th scope="col">State</th>
                <th scope="col">Next run</th>
                <th scope="col">Last run</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.value.map((s) => (
                <tr key={s.id}>
                  <td class="text" dir="auto">
                    {s.name}
                  </td>
                  <td class="text">
                    {s.cron} ({s.timezone})
                  </td>
                  <td>{s.paused ? 'paused' : 'active'}</td>
                  <td>{when(s.next_run_at)}</td>
                  <td>{s.last_run_id ? <Link to={sectionPath(workspace.id, 'workflows', wfId, 'runs', s.last_run_id)}>{when(s.last_run_at) || 'the last run'}</Link> : 'never'}</td>
                  <td class="actions">
                    <PauseButton name={s.name} paused={s.paused} onToggle={() => act(() => ok(api.value.PATCH('/api/v1/workflows/{workflowId}/schedules/{scheduleId}', { params: { header, path: path(s.id) }, body: { paused: !s.paused } })))} />{' '}
                    <DeleteButton name={s.name} onDelete={() => act(() => ok(api.value.DELETE('/api/v1/workflows/{workflowId}/schedules/{scheduleId}', { params: { header, path: path(s.id) } })))} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <details>
        <summary>New schedule</summary>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            act(async () => {
              const body = { cron: cron.value, timezone: timezone.value || 'UTC', input: parseJson(input.value, 'The input'), ...(name.value.trim() ? { name: name.value.trim() } : {}) };
              await ok(api.value.POST('/api/v1/workflows/{workflowId}/schedules', { params: { header, path: { workflowId: wfId } }, body }));
            });
          }}
        >
          <label for="schedule-cron">Cron expression (minute hour day month weekday)</label>
          <input id="schedule-cron" value={cron.value} required onInput={(e) => (cron.value = (e.target as HTMLInputElement).value)} />
          <label for="schedule-tz">Time zone (IANA)</label>
          <input id="schedule-tz" value={timezone.value} onInput={(e) => (timezone.value = (e.target as HTMLInputElement).value)} />
          <label for="schedule-name">Schedule's name</label>
          <input id="schedule-name" value={name.value} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
          <label for="schedule-input">Input of its runs (JSON)</label>
          <textarea id="schedule-input" rows={3} spellcheck={false} value={input.value} onInput={(e) => (input.value = (e.target as HTMLTextAreaElement).value)} />
          <button type="submit">Create the schedule</button>
        </form>
      </details>
    </>
  );
}

function Hooks({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  const header = scoped(workspace.id);
  const list = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}/hooks', { params: { header, path: { workflowId: wfId }, query: { limit: 200 } } })), [wfId]);
  const { failed, act } = useAction(list.reload);
  const name = useSignal('');
  const secret = useSignal<{ name: string; path: string; secret: string } | null>(null);
  const path = (hookId: string) => ({ workflowId: wfId, hookId });
  const shown = (s: { name: string; path: string; secret: string }) => (secret.value = s);
  return (
    <>
      <h3>Webhooks</h3>
      <Problem error={list.error.value} />
      <Problem error={failed.value} />
      {secret.value && (
        <div role="status" class="notice">
          <p dir="auto">
            The signing secret of {secret.value.name}, shown this once (HMAC-SHA256 of the body, as GitHub's X-Hub-Signature-256 or Stripe-Signature):
          </p>
          <pre class="code">{secret.value.secret}</pre>
          <p>
            Deliveries go to <code>{`${location.origin}${secret.value.path}`}</code>.{' '}
            <button type="button" onClick={() => (secret.value = null)}>
              I have kept it
            </button>
          </p>
        </div>
      )}
      {list.data.value && list.data.value.length === 0 && <p>No webhooks.</p>}
      {list.data.value && list.data.value.length > 0 && (
        <div class="scroll">
          <table>
            <caption>Webhooks of this workflow</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Delivery path</th>
                <th scope="col">State</th>
                <th scope="col">Secret rotated</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.value.map((x) => (
                <tr key={x.id}>
                  <td class="text" dir="auto">
                    {x.name}
                  </td>
                  <td class="text">{x.path}</td>
                  <td>{x.paused ? 'paused' : 'active'}</td>
                  <td>{when(x.secret_rotated_at)}</td>
                  <td class="actions">
                    <PauseButton name={x.name} paused={x.paused} onToggle={() => act(() => ok(api.value.PATCH('/api/v1/workflows/{workflowId}/hooks/{hookId}', { params: { header, path: path(x.id) }, body: { paused: !x.paused } })))} />{' '}
                    <button
                      type="button"
                      onClick={() =>
                        act(async () => shown(await ok(api.value.POST('/api/v1/workflows/{workflowId}/hooks/{hookId}/rotate-secret', { params: { header, path: path(x.id) } }))))
                      }
                      aria-label={`New secret for ${x.name}`}
                    >
                      New secret
                    </button>{' '}
                    <DeleteButton name={x.name} onDelete={() => act(() => ok(api.value.DELETE('/api/v1/workflows/{workflowId}/hooks/{hookId}', { params: { header, path: path(x.id) } })))} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          act(async () => {
            shown(await ok(api.value.POST('/api/v1/workflows/{workflowId}/hooks', { params: { header, path: { workflowId: wfId } }, body: name.value.trim() ? { name: name.value.trim() } : {} })));
            name.value = '';
          });
        }}
      >
        <label for="hook-name">New webhook's name</label>
        <input id="hook-name" value={name.value} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
        <button type="submit">Create the webhook</button>
      </form>
    </>
  );
}

const EVENTS: TriggerKind[] = ['file_uploaded', 'document_changed', 'row_inserted', 'row_updated', 'row_deleted'];

function Triggers({ workspace, wfId }: { workspace: Workspace; wfId: string }) {
  const header = scoped(workspace.id);
  const list = useLoad(() => ok(api.value.GET('/api/v1/workflows/{workflowId}/triggers', { params: { header, path: { workflowId: wfId }, query: { limit: 200 } } })), [wfId]);
  const { failed, act } = useAction(list.reload);
  const event = useSignal<TriggerKind>('row_inserted');
  const table = useSignal('');
  const name = useSignal('');
  const open = useSignal<string | null>(null);
  const path = (triggerId: string) => ({ workflowId: wfId, triggerId });
  const rowEvent = event.value.startsWith('row_');
  return (
    <>
      <h3>Triggers</h3>
      <Problem error={list.error.value} />
      <Problem error={failed.value} />
      {list.data.value && list.data.value.length === 0 && <p>No triggers.</p>}
      {list.data.value && list.data.value.length > 0 && (
        <div class="scroll">
          <table>
            <caption>Triggers of this workflow</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Event</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.value.map((t) => (
                <tr key={t.id}>
                  <td class="text" dir="auto">
                    {t.name}
                  </td>
                  <td class="text" dir="auto">
                    {t.event}
                    {t.table_name ? ` on ${t.table_name}` : ''}
                  </td>
                  <td>{t.paused ? 'paused' : 'active'}</td>
                  <td class="actions">
                    <button type="button" aria-label={`Events of ${t.name}`} aria-expanded={open.value === t.id} onClick={() => (open.value = open.value === t.id ? null : t.id)}>
                      Events
                    </button>{' '}
                    <PauseButton name={t.name} paused={t.paused} onToggle={() => act(() => ok(api.value.PATCH('/api/v1/workflows/{workflowId}/triggers/{triggerId}', { params: { header, path: path(t.id) }, body: { paused: !t.paused } })))} />{' '}
                    <DeleteButton name={t.name} onDelete={() => act(() => ok(api.value.DELETE('/api/v1/workflows/{workflowId}/triggers/{triggerId}', { params: { header, path: path(t.id) } })))} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {open.value && <Events key={open.value} workspace={workspace} wfId={wfId} triggerId={open.value} name={list.data.value?.find((t) => t.id === open.value)?.name ?? ''} />}
      <details>
        <summary>New trigger</summary>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            act(() =>
              ok(
                api.value.POST('/api/v1/workflows/{workflowId}/triggers', {
                  params: { header, path: { workflowId: wfId } },
                  body: { event: event.value, ...(rowEvent ? { table_name: table.value.trim() } : {}), ...(name.value.trim() ? { name: name.value.trim() } : {}) },
                }),
              ),
            );
          }}
        >
          <label for="trigger-event">Event</label>
          <select id="trigger-event" value={event.value} onChange={(e) => (event.value = (e.target as HTMLSelectElement).value as TriggerKind)}>
            {EVENTS.map((x) => (
              <option key={x} value={x}>
                {x}
              </option>
            ))}
          </select>
          {rowEvent && (
            <>
              <label for="trigger-table">Table</label>
              <input id="trigger-table" value={table.value} required onInput={(e) => (table.value = (e.target as HTMLInputElement).value)} />
            </>
          )}
          <label for="trigger-name">Trigger's name</label>
          <input id="trigger-name" value={name.value} onInput={(e) => (name.value = (e.target as HTMLInputElement).value)} />
          <button type="submit">Create the trigger</button>
        </form>
      </details>
    </>
  );
}

function Events({ workspace, wfId, triggerId, name }: { workspace: Workspace; wfId: string; triggerId: string; name: string }) {
  const header = scoped(workspace.id);
  const status = useSignal<'' | Event['status']>('');
  const list = useLoad(
    () =>
      ok(
        api.value.GET('/api/v1/workflows/{workflowId}/triggers/{triggerId}/events', {
          params: { header, path: { workflowId: wfId, triggerId }, query: { limit: 100, ...(status.value ? { status: status.value } : {}) } },
        }),
      ),
    [triggerId, status.value],
  );
  const { failed, act } = useAction(list.reload);
  return (
    <div class="events">
      <h4 dir="auto">Events of the trigger {name}</h4>
      <div class="row">
        <label for="events-status">Status</label>
        <select id="events-status" value={status.value} onChange={(e) => (status.value = (e.target as HTMLSelectElement).value as Event['status'])}>
          <option value="">any</option>
          <option value="pending">pending</option>
          <option value="running">running</option>
          <option value="succeeded">succeeded</option>
          <option value="dead">dead (dead letters)</option>
        </select>
      </div>
      <Problem error={list.error.value} />
      <Problem error={failed.value} />
      {list.data.value && list.data.value.length === 0 && <p>No events{status.value ? ' with this status' : ''}.</p>}
      {list.data.value && list.data.value.length > 0 && (
        <div class="scroll">
          <table>
            <caption>Events, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Recorded</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Run</th>
                <th scope="col">Event and last error</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.value.map((ev) => (
                <tr key={ev.id}>
                  <td>{when(ev.created_at)}</td>
                  <td>
                    <Status value={ev.status} />
                  </td>
                  <td>{ev.attempts}</td>
                  <td>{ev.run_id ? <Link to={sectionPath(workspace.id, 'workflows', wfId, 'runs', ev.run_id)}>{`Run ${ev.run_id.slice(0, 8)}`}</Link> : ''}</td>
                  <td class="text">
                    <Json value={ev.event} label="The event" />
                    {ev.last_error !== null && <Json value={ev.last_error} label="Its last error" />}
                  </td>
                  <td>
                    {ev.status === 'dead' && (
                      <button
                        type="button"
                        onClick={() =>
                          act(() =>
                            ok(api.value.POST('/api/v1/workflows/{workflowId}/triggers/{triggerId}/events/{eventId}/replay', { params: { header, path: { workflowId: wfId, triggerId, eventId: ev.id } } })),
                          )
                        }
                      >
                        Replay
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

/** Pause or resume a schedule, webhook or trigger, named for it. */
function PauseButton({ name, paused, onToggle }: { name: string; paused: boolean; onToggle: () => void }) {
  return (
    <button type="button" onClick={onToggle} aria-label={paused ? `Resume ${name}` : `Pause ${name}`}>
      {paused ? 'Resume' : 'Pause'}
    </button>
  );
}

/** Delete a schedule, webhook or trigger, named for it. */
function DeleteButton({ name, onDelete }: { name: string; onDelete: () => void }) {
  return (
    <button type="button" class="danger" aria-label={`Delete ${name}`} onClick={onDelete}>
      Delete
    </button>
  );
}
