import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import { navigate, sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { api } from '../session.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { LineDiff } from './documents/diff.js';
import { renderMarkdown } from './documents/markdown.js';
import './documents.css';

type DocumentSummary = View<'DocumentSummary'>;
type Version = View<'DocumentVersion'>;

const PAGE = 50;

/**
 * Documents: the list (with its type and status filters), a new one, and one document (the address's rest,
 * `…/documents/<id>`): its Markdown rendered and sanitised, editing (a save adds a version), the versions and a
 * line diff between any two of them.
 */
export default function DocumentsPage({ workspace, rest }: SectionProps) {
  const ws = workspace.id;
  const offset = useSignal(0);
  const docType = useSignal('');
  const status = useSignal('');
  const filters = useSignal({ doc_type: '', status: '' });
  const docs = useLoad<DocumentSummary[]>(
    () =>
      ok(
        api.value.GET('/api/v1/workspaces/{id}/documents', {
          params: {
            path: { id: ws },
            header: { 'X-Workspace-ID': ws },
            query: {
              limit: PAGE + 1,
              offset: offset.value,
              ...(filters.value.doc_type ? { doc_type: filters.value.doc_type } : {}),
              ...(filters.value.status ? { status: filters.value.status } : {}),
            },
          },
        }),
      ),
    [ws, offset.value, filters.value],
  );
  const list = docs.data.value ?? [];
  const shown = list.slice(0, PAGE);
  const selected = rest[0];

  return (
    <div class="documents-page">
      <h1>Documents</h1>
      <form
        class="filters"
        aria-label="Filter documents"
        onSubmit={(e) => {
          e.preventDefault();
          offset.value = 0;
          filters.value = { doc_type: docType.value.trim(), status: status.value.trim() };
        }}
      >
        <span class="field">
          <label for="doc-filter-type">Type</label>
          <input id="doc-filter-type" value={docType.value} onInput={(e) => (docType.value = (e.target as HTMLInputElement).value)} />
        </span>
        <span class="field">
          <label for="doc-filter-status">Status</label>
          <input id="doc-filter-status" value={status.value} onInput={(e) => (status.value = (e.target as HTMLInputElement).value)} />
        </span>
        <button type="submit">Filter</button>
      </form>
      <Problem error={docs.error.value} />
      {docs.data.value === null && !docs.error.value ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 ? (
        <p>No documents{filters.value.doc_type || filters.value.status ? ' match these filters' : ' yet'}.</p>
      ) : (
        <div class="scroll">
          <table>
            <caption>Documents, in creation order</caption>
            <thead>
              <tr>
                <th scope="col" class="wrap">
                  Title
                </th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Version</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((d) => (
                <tr key={d.id} aria-current={d.id === selected ? 'true' : undefined}>
                  <td class="wrap" dir="auto">
                    <Link to={sectionPath(ws, 'documents', d.id)}>{d.title}</Link>
                  </td>
                  <td class="value" dir="auto">
                    {d.doc_type}
                  </td>
                  <td class="value" dir="auto">
                    {d.status}
                  </td>
                  <td>{d.version}</td>
                  <td>{when(d.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(offset.value > 0 || list.length > PAGE) && (
        <nav class="pager" aria-label="Pages of documents">
          <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE))}>
            Previous page
          </button>
          <button type="button" disabled={list.length <= PAGE} onClick={() => (offset.value += PAGE)}>
            Next page
          </button>
        </nav>
      )}
      <NewDocument workspaceId={ws} />
      {selected && <DocumentView key={selected} workspaceId={ws} docId={selected} onChanged={() => docs.reload()} />}
    </div>
  );
}

function NewDocument({ workspaceId }: { workspaceId: string }) {
  const title = useSignal('');
  const docType = useSignal('note');
  const status = useSignal('draft');
  const error = useSignal<unknown>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    error.value = null;
    try {
      const doc = await ok(
        api.value.POST('/api/v1/workspaces/{id}/documents', {
          params: { path: { id: workspaceId }, header: { 'X-Workspace-ID': workspaceId } },
          body: { title: title.value, doc_type: docType.value, status: status.value, content: '' },
        }),
      );
      title.value = '';
      navigate(sectionPath(workspaceId, 'documents', doc.id));
    } catch (err) {
      error.value = err;
    }
  };
  const field = (id: string, label: string, s: typeof title) => (
    <span class="field">
      <label for={id}>{label}</label>
      <input id={id} value={s.value} onInput={(e) => (s.value = (e.target as HTMLInputElement).value)} />
    </span>
  );
  return (
    <section aria-labelledby="new-doc-heading">
      <h2 id="new-doc-heading">New document</h2>
      <form class="new-doc" onSubmit={create}>
        {field('new-doc-title', 'Title', title)}
        {field('new-doc-type', 'Type', docType)}
        {field('new-doc-status', 'Status', status)}
        <button type="submit">Create document</button>
      </form>
      <Problem error={error.value} label="New document" />
    </section>
  );
}

/** One document: rendered, editable, its versions and a diff between two of them. */
function DocumentView({ workspaceId, docId, onChanged }: { workspaceId: string; docId: string; onChanged: () => void }) {
  const params = { path: { id: workspaceId, docId }, header: { 'X-Workspace-ID': workspaceId } };
  const doc = useLoad(() => ok(api.value.GET('/api/v1/workspaces/{id}/documents/{docId}', { params })), [docId]);
  const versions = useLoad<Version[]>(
    () => ok(api.value.GET('/api/v1/workspaces/{id}/documents/{docId}/versions', { params: { ...params, query: { limit: 50 } } })),
    [docId],
  );
  const members = useLoad(() => ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path: { id: workspaceId }, query: { limit: 1000 } } })), [workspaceId]);
  const people = new Map((members.data.value ?? []).map((m) => [m.user_id, m.user_name]));
  const editing = useSignal(false);
  const draftTitle = useSignal('');
  const draft = useSignal('');
  const saved = useSignal('');
  const saveError = useSignal<unknown>(null);
  const from = useSignal<number | null>(null);
  const to = useSignal<number | null>(null);
  const d = doc.data.value;

  // The diff compares the version before the newest with the newest until the person picks others.
  useEffect(() => {
    const vs = versions.data.value;
    if (!vs || vs.length === 0) return;
    to.value = vs[0]!.version;
    from.value = (vs[1] ?? vs[0])!.version;
  }, [versions.data.value]);

  const edit = () => {
    if (!d) return;
    draftTitle.value = d.title;
    draft.value = d.content;
    saved.value = '';
    saveError.value = null;
    editing.value = true;
  };
  const save = async (e: Event) => {
    e.preventDefault();
    if (!d) return;
    saveError.value = null;
    try {
      const body: { content?: string; title?: string } = {};
      if (draft.value !== d.content) body.content = draft.value;
      if (draftTitle.value !== d.title) body.title = draftTitle.value;
      const after = await ok(api.value.PATCH('/api/v1/workspaces/{id}/documents/{docId}', { params, body }));
      saved.value = after.version > d.version ? `Saved as version ${after.version}.` : 'Saved (the content did not change, so no version was added).';
      editing.value = false;
      await Promise.all([doc.reload(), versions.reload()]);
      onChanged();
    } catch (err) {
      saveError.value = err;
    }
  };

  const vs = versions.data.value ?? [];
  const byNumber = new Map(vs.map((v) => [v.version, v]));
  const a = from.value === null ? undefined : byNumber.get(from.value);
  const b = to.value === null ? undefined : byNumber.get(to.value);
  const versionSelect = (id: string, label: string, s: typeof from) => (
    <span class="field">
      <label for={id}>{label}</label>
      <select id={id} value={s.value ?? ''} onChange={(e) => (s.value = Number((e.target as HTMLSelectElement).value))}>
        {vs.map((v) => (
          <option key={v.version} value={v.version}>
            Version {v.version} ({when(v.created_at)})
          </option>
        ))}
      </select>
    </span>
  );

  return (
    <section class="document" aria-labelledby="doc-heading">
      <Problem error={doc.error.value} />
      {d && (
        <>
          <h2 id="doc-heading" dir="auto" class="value">
            {d.title}
          </h2>
          <p class="meta">
            <span dir="auto">Type {d.doc_type}</span> · <span dir="auto">status {d.status}</span> · version {d.version} · updated {when(d.updated_at)}
          </p>
          <p role="status">{saved.value}</p>
          {editing.value ? (
            <form class="edit" onSubmit={save}>
              <label for="doc-edit-title">Title</label>
              <input id="doc-edit-title" value={draftTitle.value} onInput={(e) => (draftTitle.value = (e.target as HTMLInputElement).value)} />
              <label for="doc-edit-content">Content (Markdown)</label>
              <textarea id="doc-edit-content" rows={16} value={draft.value} onInput={(e) => (draft.value = (e.target as HTMLTextAreaElement).value)} />
              <div class="actions">
                <button type="submit">Save</button>
                <button type="button" onClick={() => (editing.value = false)}>
                  Cancel editing
                </button>
              </div>
              <Problem error={saveError.value} label="Save" />
            </form>
          ) : (
            <>
              <button type="button" onClick={edit}>
                Edit
              </button>
              <article
                class="markdown"
                aria-label={`Content of ${d.title}`}
                dir="auto"
                // biome-ignore lint/security/noDangerouslySetInnerHtml: Markdown rendered by marked and sanitised by DOMPurify (documents/markdown.ts)
                dangerouslySetInnerHTML={{ __html: renderMarkdown(d.content) }}
              />
              {d.content === '' && <p>This document is empty.</p>}
            </>
          )}

          <h3>Versions</h3>
          <Problem error={versions.error.value} label="Versions" />
          {vs.length > 0 && (
            <div class="scroll">
              <table>
                <caption>Versions, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Version</th>
                    <th scope="col" class="wrap">
                      Title then
                    </th>
                    <th scope="col">Saved by</th>
                    <th scope="col">Saved</th>
                  </tr>
                </thead>
                <tbody>
                  {vs.map((v) => (
                    <tr key={v.id}>
                      <td>{v.version}</td>
                      <td class="wrap" dir="auto">
                        {v.title}
                      </td>
                      <td class="value" dir="auto">
                        {v.created_by ? (people.get(v.created_by) ?? v.created_by) : ''}
                      </td>
                      <td>{when(v.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {vs.length > 1 && (
            <>
              <h3>Compare versions</h3>
              <div class="compare">
                {versionSelect('diff-from', 'From version', from)}
                {versionSelect('diff-to', 'To version', to)}
              </div>
              {a && b && <LineDiff before={a.content} after={b.content} label={`Changes from version ${a.version} to version ${b.version}`} />}
            </>
          )}
        </>
      )}
    </section>
  );
}
