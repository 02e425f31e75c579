import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

/** Paths remembered per method; beyond, the oldest is forgotten. */
const MAX_PATHS = 1000;
/** Longer paths are matched every time: no caller can fill the memory with long keys. */
const MAX_PATH_LENGTH = 256;

/**
 * Hono's router with the result of each (method, path) remembered. Our routes make Hono's RegExpRouter give up
 * (`…/chat-templates/deactivate` beside `…/chat-templates/:templateId/activate`), and its TrieRouter walks every
 * node and sorts the handlers on each request: ~3% of the API's CPU (issue 16). Once the routes are added the
 * answer for a path never changes and Hono only reads it, so the same result serves every request for that path —
 * a client mostly calls the same few (its workspace's SQL endpoint).
 */
export class MemoRouter<T> implements Router<T> {
  readonly name: string;
  private readonly byMethod = new Map<string, Map<string, Result<T>>>();

  constructor(private readonly router: Router<T> = new SmartRouter({ routers: [new RegExpRouter(), new TrieRouter()] })) {
    this.name = `MemoRouter(${router.name})`;
  }

  add(method: string, path: string, handler: T): void {
    this.byMethod.clear();
    this.router.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    let paths = this.byMethod.get(method);
    const known = paths?.get(path);
    if (known) return known;
    const result = this.router.match(method, path);
    if (path.length <= MAX_PATH_LENGTH) {
      if (!paths) {
        paths = new Map();
        this.byMethod.set(method, paths);
      }
      if (paths.size >= MAX_PATHS) paths.delete(paths.keys().next().value as string);
      paths.set(path, result);
    }
    return result;
  }
}
