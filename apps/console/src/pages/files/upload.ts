import { ApiError, type View } from '@wds/client';
import { ConsoleError } from '../../ui/problem.js';

export type UploadedFile = View<'File'>;

/** An upload under way: its answer, and the way to stop it. */
export interface Upload {
  done: Promise<UploadedFile>;
  abort(): void;
}

/** The upload was cancelled by the person (xhr.abort): the service stores nothing of an upload cut short. */
export class UploadCancelled extends Error {
  override name = 'UploadCancelled';
}

/**
 * Sends a file to `POST /api/v1/workspaces/{id}/files/multipart` (part `file`) with XMLHttpRequest, whose
 * `upload.onprogress` reports the bytes sent (fetch has no upload progress). The body is streamed by the browser
 * from the file on disk, never read into memory here.
 */
export function uploadFile(workspaceId: string, token: string, file: File, onProgress: (sent: number, total: number) => void): Upload {
  const xhr = new XMLHttpRequest();
  const done = new Promise<UploadedFile>((resolve, reject) => {
    xhr.open('POST', `/api/v1/workspaces/${encodeURIComponent(workspaceId)}/files/multipart`);
    xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    xhr.setRequestHeader('X-Workspace-ID', workspaceId);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      let body: unknown = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        // Not JSON: ApiError says the status then.
      }
      if (xhr.status === 201) return resolve(body as UploadedFile);
      const headers = new Headers();
      const requestId = xhr.getResponseHeader('x-request-id');
      if (requestId) headers.set('x-request-id', requestId);
      reject(new ApiError(new Response(null, { status: xhr.status, statusText: xhr.statusText, headers }), body));
    };
    xhr.onabort = () => reject(new UploadCancelled('The upload was cancelled.'));
    xhr.onerror = () => reject(new ConsoleError('The upload stopped: the connection to the service was lost (a file above the size limit is refused this way too).'));
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { done, abort: () => xhr.abort() };
}

/** A size in bytes as a person reads it (1 KB = 1000 bytes), with the exact count when it is not tiny. */
export function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}
