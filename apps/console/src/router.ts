import { signal } from '@preact/signals';

/** Paths under /console/ (the History API; the service answers every /console/… path with the app). */
export const BASE = '/console';
export const path = signal(location.pathname.replace(/\/+$/, '') || BASE);

export function navigate(to: string): void {
  if (to === path.value) return;
  history.pushState(null, '', to);
  path.value = to;
}

addEventListener('popstate', () => {
  path.value = location.pathname.replace(/\/+$/, '') || BASE;
});
