/**
 * The Google Drive v3 calls drive sync makes, over ProviderClient (so the workspace credential, the path rules and
 * the outbound guard apply to each). JSON answers are capped at 10 MB; a non-2xx answer becomes a ServiceError whose
 * message summarises Drive's error body (its message and reason, never a header).
 */
import { ServiceError, validationError } from '@wds/errors';
import { DRIVE_PROVIDER, PROXY_MAX_BYTES, type ProviderClient, type ProviderQuery, type ProviderStream } from '@wds/providers';

export const FOLDER_MIME = 'application/vnd.google-apps.folder';
export const GOOGLE_APPS_PREFIX = 'application/vnd.google-apps.';

/** Native Docs Editors types and the text format each is exported as. */
export const EXPORT_FORMATS: Readonly<Record<string, { mimeType: string; extension: string }>> = {
  'application/vnd.google-apps.document': { mimeType: 'text/plain', extension: '.txt' },
  'application/vnd.google-apps.spreadsheet': { mimeType: 'text/csv', extension: '.csv' },
  'application/vnd.google-apps.presentation': { mimeType: 'text/plain', extension: '.txt' },
};

const FILE_FIELDS = 'id,name,mimeType,parents,modifiedTime,size,driveId,trashed';
const DRIVE_ID = /^[A-Za-z0-9_-]{1,256}$/;

export interface DriveFile {
  id: string;
  name: string;
  mimeType: string;
  parents?: string[];
  modifiedTime?: string;
  /** int64 as a decimal string; absent for folders and native docs. */
  size?: string;
  driveId?: string;
  trashed?: boolean;
}

export interface DriveListParams {
  q?: string;
  pageToken?: string;
  pageSize?: number;
  fields?: string;
  orderBy?: string;
  supportsAllDrives?: boolean;
  includeItemsFromAllDrives?: boolean;
  corpora?: 'user' | 'drive' | 'allDrives' | 'domain';
  driveId?: string;
}

export interface DriveList {
  files: DriveFile[];
  nextPageToken?: string;
}

export interface SharedDrive {
  id: string;
  name: string;
}

/** A Drive id (file, folder, shared drive or the alias 'root'); VALIDATION_ERROR otherwise. */
export function checkDriveId(id: unknown, field: string): string {
  if (typeof id !== 'string' || !DRIVE_ID.test(id)) throw validationError(`${field}: a Drive id (letters, digits, - and _)`);
  return id;
}

/** Bearer tokens and Google access tokens, should a provider ever echo one into an error text. */
const TOKENISH = /(Bearer\s+)\S+|ya29\.[\w.-]+/gi;
export const scrubTokens = (text: string): string => text.replace(TOKENISH, (_m, bearer?: string) => `${bearer ?? ''}[redacted]`);

/** One line from a Drive (or OAuth) error body: "reason: message", or the start of the text. */
export function summarizeDriveError(body: string): string {
  let summary = body.trim();
  try {
    const parsed = JSON.parse(body) as { error?: unknown; error_description?: unknown };
    const err = parsed.error;
    if (typeof err === 'object' && err !== null) {
      const e = err as { message?: unknown; errors?: Array<{ reason?: unknown }>; status?: unknown };
      const reason = typeof e.errors?.[0]?.reason === 'string' ? e.errors[0].reason : typeof e.status === 'string' ? e.status : undefined;
      const message = typeof e.message === 'string' ? e.message : '';
      summary = reason ? `${reason}: ${message}` : message;
    } else if (typeof err === 'string') {
      summary = typeof parsed.error_description === 'string' ? `${err}: ${parsed.error_description}` : err;
    }
  } catch {
    // not JSON: the text itself
  }
  return scrubTokens(summary.replace(/\s+/g, ' ')).slice(0, 300);
}

/** The ServiceError for a non-2xx Drive answer: 404 is NOT_FOUND, the rest UPSTREAM_ERROR with Drive's summary. */
export function driveError(operation: string, status: number, body: string): ServiceError {
  const summary = summarizeDriveError(body);
  if (status === 404) return new ServiceError('NOT_FOUND', 'Drive file not found', summary || undefined);
  return new ServiceError('UPSTREAM_ERROR', `Google Drive ${operation} failed: HTTP ${status}${summary ? ` ${summary}` : ''}`);
}

export class DriveClient {
  constructor(
    private readonly providers: ProviderClient,
    private readonly workspaceId: string,
    private readonly provider: string = DRIVE_PROVIDER,
  ) {}

  /** files.list (one page). */
  listFiles(params: DriveListParams): Promise<DriveList> {
    const query: Record<string, string | number | boolean | undefined> = {
      fields: params.fields ?? `nextPageToken,files(${FILE_FIELDS})`,
      q: params.q,
      pageToken: params.pageToken,
      pageSize: params.pageSize,
      orderBy: params.orderBy,
      supportsAllDrives: params.supportsAllDrives,
      includeItemsFromAllDrives: params.includeItemsFromAllDrives,
      corpora: params.corpora,
      driveId: params.driveId,
    };
    return this.json<DriveList>('files.list', '/drive/v3/files', query).then((r) => ({ ...r, files: r.files ?? [] }));
  }

  /** files.get: the metadata (shared drive files included). */
  getFile(id: string): Promise<DriveFile> {
    return this.json<DriveFile>('files.get', `/drive/v3/files/${encodeURIComponent(checkDriveId(id, 'file id'))}`, { fields: FILE_FIELDS, supportsAllDrives: true });
  }

  /** drives.list (one page). */
  listDrives(params: { pageToken?: string; pageSize?: number } = {}): Promise<{ drives: SharedDrive[]; nextPageToken?: string }> {
    return this.json<{ drives?: SharedDrive[]; nextPageToken?: string }>('drives.list', '/drive/v3/drives', {
      fields: 'nextPageToken,drives(id,name)',
      pageToken: params.pageToken,
      pageSize: params.pageSize,
    }).then((r) => ({ drives: (r.drives ?? []).map((d) => ({ id: d.id, name: d.name })), ...(r.nextPageToken ? { nextPageToken: r.nextPageToken } : {}) }));
  }

  /** The request of a binary file's content (alt=media), following the redirect to the download host. */
  mediaRequest(id: string) {
    return {
      path: `/drive/v3/files/${encodeURIComponent(checkDriveId(id, 'file id'))}`,
      query: { alt: 'media', supportsAllDrives: true } as ProviderQuery,
      redirects: 'follow-https' as const,
    };
  }

  /** The request of a native doc exported as `mimeType` (files.export). */
  exportRequest(id: string, mimeType: string) {
    return {
      path: `/drive/v3/files/${encodeURIComponent(checkDriveId(id, 'file id'))}/export`,
      query: { mimeType } as ProviderQuery,
      redirects: 'follow-https' as const,
    };
  }

  /** A file's content as a stream: alt=media, or files.export when `exportAs` is given. Non-2xx throws driveError. */
  async content(id: string, opts: { exportAs?: string; maxBytes: number }): Promise<ProviderStream> {
    const request = opts.exportAs === undefined ? this.mediaRequest(id) : this.exportRequest(id, opts.exportAs);
    const res = await this.providers.stream({ workspaceId: this.workspaceId, provider: this.provider, method: 'GET', ...request, maxBytes: opts.maxBytes });
    if (res.status < 200 || res.status > 299) {
      const chunks: Buffer[] = [];
      let size = 0;
      try {
        for await (const chunk of res.body) {
          chunks.push(chunk as Buffer);
          size += (chunk as Buffer).length;
          if (size > 64 * 1024) break;
        }
      } catch {
        // the error body is best effort
      } finally {
        res.body.destroy();
      }
      throw driveError(opts.exportAs === undefined ? 'download' : 'files.export', res.status, Buffer.concat(chunks).toString('utf8'));
    }
    return res;
  }

  private async json<T>(operation: string, path: string, query: ProviderQuery): Promise<T> {
    const res = await this.providers.request({ workspaceId: this.workspaceId, provider: this.provider, method: 'GET', path, query, headers: { Accept: 'application/json' }, maxBytes: PROXY_MAX_BYTES });
    const text = res.body.toString('utf8');
    if (res.status < 200 || res.status > 299) throw driveError(operation, res.status, text);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ServiceError('UPSTREAM_ERROR', `Google Drive ${operation} answered with a body that is not JSON`);
    }
  }
}
