import type { ComponentChildren } from 'preact';
import { navigate } from '../router.js';

/**
 * A link inside the console: a real <a href> (open in a new tab, copy the address), followed in place by the router.
 * Only console paths are links; anything from data is text (no `javascript:` or outside address can become one).
 */
export function Link({ to, children, current }: { to: string; children: ComponentChildren; current?: boolean }) {
  if (!to.startsWith('/console')) return <>{children}</>;
  return (
    <a
      href={to}
      aria-current={current ? 'page' : undefined}
      onClick={(e) => {
        if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
        e.preventDefault();
        navigate(to);
      }}
    >
      {children}
    </a>
  );
}
