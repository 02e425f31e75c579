import { computed, signal } from '@preact/signals';

/** Paths under /console/ (the History API; the service answers every /console/… path with the app). */
export const BASE = '/console';

const current = () => location.pathname.replace(/\/+$/, '') || BASE;
export const path = signal(current());
/** The query string of the address (filters of a page live there, so a link keeps them). */
export const query = signal(location.search);

export function navigate(to: string): void {
  if (to === `${location.pathname}${location.search}`) return;
  history.pushState(null, '', to);
  path.value = current();
  query.value = location.search;
}

addEventListener('popstate', () => {
  path.value = current();
  query.value = location.search;
});

/**
 * Where the address points: the sign-in page, the workspaces list, or a section of one workspace
 * (`/console/w/<workspace id>/<section>/<rest…>`, e.g. `/console/w/…/workflows/<id>/runs/<run id>`).
 */
export type Place = { kind: 'login' } | { kind: 'callback' } | { kind: 'workspaces' } | { kind: 'section'; workspaceId: string; section: string; rest: string[] };

export const place = computed<Place>(() => {
  const p = path.value;
  if (p === `${BASE}/login`) return { kind: 'login' };
  if (p === `${BASE}/callback`) return { kind: 'callback' };
  const m = /^\/console\/w\/([^/]+)(?:\/([^/]+))?((?:\/[^/]+)*)$/.exec(p);
  if (!m) return { kind: 'workspaces' };
  return {
    kind: 'section',
    workspaceId: decodeURIComponent(m[1] as string),
    section: m[2] ?? 'sql',
    rest: (m[3] ?? '').split('/').filter(Boolean).map(decodeURIComponent),
  };
});

/** The address of a workspace's section (and what follows it), every part encoded. */
export const sectionPath = (workspaceId: string, section: string, ...rest: string[]): string =>
  [BASE, 'w', workspaceId, section, ...rest].map((s, i) => (i < 2 ? s : encodeURIComponent(s))).join('/');
