import { type View, ok } from '@wds/client';
import { useSignal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { sectionPath } from '../router.js';
import type { SectionProps } from '../sections.js';
import { api, token } from '../session.js';
import { Link } from '../ui/link.js';
import { useLoad } from '../ui/load.js';
import { Problem } from '../ui/problem.js';
import { when } from '../ui/values.js';
import { type Upload, UploadCancelled, bytes, uploadFile } from './files/upload.js';
import './files.css';

type FileView = View<'File'>;
type EmbeddingState = View<'FileEmbeddingStatus'>['files'][number];

const PAGE = 50;

/** Types the text route reads (docs/files.md#text); others have no text preview. */
const hasText = (type: string) =>
  /^text\//.test(type) || /^application\/(json|xml|pdf|csv|x-ndjson|ld\+json|xhtml\+xml)\b/.test(type) || /\+(json|xml)\b/.test(type);

/**
 * Files: upload (multipart, with its progress and a Cancel), the list with each file's embedding status, and one
 * file's details with a download and a text preview. The file chosen is the address's rest (`…/files/<id>`).
 */
export default function FilesPage({ workspace, rest }: SectionProps) {
  const ws = workspace.id;
  const header = { 'X-Workspace-ID': ws };
  const offset = useSignal(0);
  const files = useLoad(
    () => ok(api.value.GET('/api/v1/workspaces/{id}/files', { params: { path: { id: ws }, header, query: { limit: PAGE + 1, offset: offset.value } } })),
    [ws, offset.value],
  );
  const embedding = useLoad(
    () => ok(api.value.GET('/api/v1/workspaces/{id}/embeddings/files/status', { params: { path: { id: ws } } })),
    [ws],
  );
  const states = new Map<string, EmbeddingState>((embedding.data.value?.files ?? []).map((f) => [f.file_id, f]));
  const embedError = useSignal<unknown>(null);
  const embed = async (id: string) => {
    embedError.value = null;
    try {
      await ok(api.value.POST('/api/v1/workspaces/{id}/embeddings/files/embed', { params: { path: { id: ws } }, body: { file_ids: [id] } }));
      await embedding.reload();
    } catch (err) {
      embedError.value = err;
    }
  };
  const list = files.data.value ?? [];
  const shown = list.slice(0, PAGE);
  const selected = rest[0];

  return (
    <div class="files-page">
      <h1>Files</h1>
      <UploadForm workspaceId={ws} onUploaded={() => files.reload().then(embedding.reload)} />

      <h2>Stored in this workspace</h2>
      <Problem error={files.error.value} />
      <Problem error={embedding.error.value} label="Embedding status" />
      <Problem error={embedError.value} label="Embedding" />
      {files.data.value === null && !files.error.value ? (
        <p role="status">Loading…</p>
      ) : shown.length === 0 && offset.value === 0 ? (
        <p>No files yet.</p>
      ) : (
        <div class="scroll">
          <table class="files-list">
            <caption>Files, newest first</caption>
            <thead>
              <tr>
                <th scope="col" class="wrap">
                  Name
                </th>
                <th scope="col">Type</th>
                <th scope="col">Size</th>
                <th scope="col">Uploaded</th>
                <th scope="col">Embedding</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((f) => {
                const s = states.get(f.id);
                return (
                  <tr key={f.id} aria-current={f.id === selected ? 'true' : undefined}>
                    <td class="wrap" dir="auto">
                      <Link to={sectionPath(ws, 'files', f.id)}>{f.filename}</Link>
                    </td>
                    <td class="type">{f.content_type}</td>
                    <td title={`${f.size} bytes`}>{bytes(f.size)}</td>
                    <td>{when(f.created_at)}</td>
                    <td class="state">
                      {s ? (s.error ? `${s.status}: ${s.error}` : s.status) : 'not embedded'}
                      {(!s || s.status === 'failed' || s.status === 'skipped') && (
                        <>
                          {' '}
                          <button type="button" class="small" aria-label={`Embed ${f.filename}`} onClick={() => embed(f.id)}>
                            Embed
                          </button>
                        </>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
        <button type="button" disabled={offset.value === 0} onClick={() => (offset.value = Math.max(0, offset.value - PAGE))}>
          Previous page
        </button>
        <span>{shown.length > 0 ? `Files ${offset.value + 1}–${offset.value + shown.length}` : ''}</span>
        <button type="button" disabled={list.length <= PAGE} onClick={() => (offset.value += PAGE)}>
          Next page
        </button>
        <button type="button" onClick={() => embedding.reload()}>
          Refresh embedding status
        </button>
      </div>

      {selected && <FileDetails key={selected} workspaceId={ws} fileId={selected} embedding={states.get(selected)} />}
    </div>
  );
}

/** Choose a file and send it, with a progress bar and a Cancel button while it goes. */
function UploadForm({ workspaceId, onUploaded }: { workspaceId: string; onUploaded: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const progress = useSignal<{ name: string; sent: number; total: number } | null>(null);
  const message = useSignal('');
  const error = useSignal<unknown>(null);
  const current = useRef<Upload | null>(null);
  useEffect(() => () => current.current?.abort(), []);

  const start = async (e: Event) => {
    e.preventDefault();
    const file = input.current?.files?.[0];
    if (!file || !token.value) return;
    error.value = null;
    message.value = '';
    progress.value = { name: file.name, sent: 0, total: file.size };
    const upload = uploadFile(workspaceId, token.value, file, (sent, total) => (progress.value = { name: file.name, sent, total }));
    current.current = upload;
    try {
      const stored = await upload.done;
      message.value = `Uploaded ${stored.filename} (${bytes(stored.size)}).`;
      if (input.current) input.current.value = '';
      onUploaded();
    } catch (err) {
      if (err instanceof UploadCancelled) message.value = `The upload of ${file.name} was cancelled; nothing was stored.`;
      else error.value = err;
    } finally {
      current.current = null;
      progress.value = null;
    }
  };

  const p = progress.value;
  const pct = p && p.total > 0 ? Math.floor((p.sent / p.total) * 100) : 0;
  return (
    <section aria-labelledby="upload-heading">
      <h2 id="upload-heading">Upload a file</h2>
      <form class="upload" onSubmit={start}>
        <label for="file-to-upload">File to upload (up to 1 GB)</label>
        <input id="file-to-upload" type="file" ref={input} disabled={p !== null} />
        <button type="submit" disabled={p !== null}>
          Upload
        </button>
      </form>
      {p && (
        <div class="progress">
          <progress aria-label={`Upload progress of ${p.name}`} max={p.total || 1} value={p.sent} />
          <span dir="auto">
            {bytes(p.sent)} of {bytes(p.total)} ({pct}%)
          </span>
          <button type="button" onClick={() => current.current?.abort()}>
            Cancel upload
          </button>
        </div>
      )}
      <p role="status" class="value" dir="auto">
        {p ? `Uploading ${p.name}…` : message.value}
      </p>
      <Problem error={error.value} label="Upload" />
    </section>
  );
}

/** One file: its metadata, a download (fetched with the Bearer header, saved through a Blob URL) and its text. */
function FileDetails({ workspaceId, fileId, embedding }: { workspaceId: string; fileId: string; embedding: EmbeddingState | undefined }) {
  const params = { path: { id: workspaceId, fileId }, header: { 'X-Workspace-ID': workspaceId } };
  const file = useLoad<FileView>(() => ok(api.value.GET('/api/v1/workspaces/{id}/files/{fileId}', { params })), [fileId]);
  const text = useSignal<View<'FileText'> | null>(null);
  const textError = useSignal<unknown>(null);
  const downloading = useSignal('');
  const downloadError = useSignal<unknown>(null);
  const f = file.data.value;

  useEffect(() => {
    if (!f || !hasText(f.content_type)) return;
    ok(api.value.GET('/api/v1/workspaces/{id}/files/{fileId}/text', { params: { ...params, query: { limit: 50_000 } } })).then(
      (t) => (text.value = t),
      (err) => (textError.value = err),
    );
  }, [f?.id]);

  const download = async () => {
    if (!f) return;
    downloadError.value = null;
    downloading.value = `Downloading ${f.filename}…`;
    try {
      const { data, response } = await api.value.GET('/api/v1/workspaces/{id}/files/{fileId}/download', { params, parseAs: 'blob' });
      if (!response.ok || !(data instanceof Blob)) throw new Error('download failed');
      const url = URL.createObjectURL(data);
      const a = document.createElement('a');
      a.href = url;
      a.download = f.filename;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      downloading.value = `Saved ${f.filename}.`;
    } catch (err) {
      downloading.value = '';
      downloadError.value = err;
    }
  };

  return (
    <section class="file-details" aria-labelledby="file-heading">
      <Problem error={file.error.value} />
      {f && (
        <>
          <h2 id="file-heading" dir="auto" class="value">
            {f.filename}
          </h2>
          <dl>
            <dt>Type</dt>
            <dd class="value">{f.content_type}</dd>
            <dt>Size</dt>
            <dd>
              {bytes(f.size)} ({f.size} bytes)
            </dd>
            <dt>SHA-256</dt>
            <dd class="value">{f.sha256}</dd>
            <dt>Uploaded</dt>
            <dd>{when(f.created_at)}</dd>
            <dt>Embedding</dt>
            <dd class="value">{embedding ? (embedding.error ? `${embedding.status}: ${embedding.error}` : embedding.status) : 'not embedded'}</dd>
            <dt>Metadata</dt>
            <dd class="value">{JSON.stringify(f.metadata)}</dd>
          </dl>
          <button type="button" onClick={download}>
            Download
          </button>
          <span role="status" class="value inline-status" dir="auto">
            {downloading.value}
          </span>
          <Problem error={downloadError.value} label="Download" />
          <h3>Text preview</h3>
          {!hasText(f.content_type) ? (
            <p>This type of file has no text preview.</p>
          ) : textError.value ? (
            <Problem error={textError.value} label="Text preview" />
          ) : !text.value ? (
            <p role="status">Loading the text…</p>
          ) : (
            <>
              {text.value.next_offset !== null && (
                <p>
                  The first {text.value.text.length.toLocaleString()} of {text.value.total_chars.toLocaleString()} characters.
                </p>
              )}
              <figure class="preview">
                <figcaption class="value" dir="auto">
                  Text of {f.filename}
                </figcaption>
                <pre dir="auto">{text.value.text}</pre>
              </figure>
            </>
          )}
        </>
      )}
    </section>
  );
}
