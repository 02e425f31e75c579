import { ApiError, ok } from '@wds/client';
import { api } from '../../session.js';
import { useLoad } from '../../ui/load.js';
import type { ComponentChildren } from 'preact';
import { ConsoleError } from '../../ui/problem.js';
import './shared.css';

/**
 * Pieces the Approvals, Workflows and STFs pages share: the workspace header of header-scoped calls, JSON typed in
 * by a person (checked before anything is sent), values shown as JSON text, base64 code, raw answers.
 */
export const scoped = (workspaceId: string) => ({ 'X-Workspace-ID': workspaceId });

/** The JSON a person typed, or a ConsoleError naming what is wrong with it (nothing is sent then). */
export function parseJson(text: string, what: string): unknown {
  if (text.trim() === '') return null;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ConsoleError(`${what} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** A value as indented JSON text. */
export const pretty = (v: unknown): string => (v === undefined ? '' : (JSON.stringify(v, null, 2) ?? String(v)));

/** A JSON value as text in a block that wraps (never markup). */
export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" dir="auto" title={label}>
      {pretty(value)}
    </pre>
  );
}

/** Text (code, SQL) in a block that wraps. */
export function Code({ text, label }: { text: string; label: string }) {
  return (
    <pre class="code" dir="auto" title={label}>
      {text}
    </pre>
  );
}

/** A list of name and value pairs; each value is text. */
export function Facts({ items, label }: { items: [string, ComponentChildren][]; label?: string }) {
  return (
    <dl class="facts" title={label}>
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd dir="auto">{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** A status as a word with a colour class (and the word itself, so colour is never the only sign). */
export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.replace(/[^a-z_]/g, '')}`}>{value}</span>;
}

/** UTF-8 text of base64. */
export function fromBase64(s: string): string {
  try {
    return new TextDecoder().decode(Uint8Array.from(atob(s), (c) => c.charCodeAt(0)));
  } catch {
    return s;
  }
}

/** Base64 of UTF-8 text. */
export function toBase64(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/** A call's result as openapi-fetch answers it: its data, or an ApiError, keeping the response (for its headers). */
export async function raw<R extends { data?: unknown; error?: unknown; response: Response }>(call: Promise<R>): Promise<{ data: unknown; response: Response }> {
  const r = await call;
  if (r.error !== undefined || !r.response.ok) throw new ApiError(r.response, r.error);
  return { data: r.data, response: r.response };
}

/** Milliseconds as a person reads them. */
export const duration = (ms: number | null | undefined): string =>
  ms === null || ms === undefined ? '' : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

/** Who is who: the workspace's members by user id ("name <email>"; the id itself for someone no longer a member). */
export function useMembers(workspaceId: string) {
  const members = useLoad(
    () => ok(api.value.GET('/api/v1/workspaces/{id}/members', { params: { path: { id: workspaceId }, query: { limit: 1000 } } })).catch(() => []),
    [workspaceId],
  );
  return (userId: string | null | undefined) => {
    if (!userId) return '';
    const m = members.data.value?.find((x) => x.user_id === userId);
    return m ? `${m.user_name} <${m.user_email}>` : userId;
  };
}
