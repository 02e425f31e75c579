import { ApiError } from '@wds/client';

/**
 * A failed call as a person reads it: the service's error code, its message and its details (the SQL editor shows
 * them next to the statement), or that the service could not be reached. Text only, never markup.
 */
export function Problem({ error, label }: { error: unknown; label?: string }) {
  if (error === null || error === undefined) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div role="alert" class="problem" aria-label={label}>
      {e ? (
        <>
          <strong>{e.code ?? e.status}</strong> {String((e.body as { error?: unknown } | undefined)?.error ?? e.message)}
          {e.details && <pre class="details">{e.details}</pre>}
        </>
      ) : (
        error instanceof Error && error.name === 'ConsoleError' ? error.message : 'The service could not be reached.'
      )}
    </div>
  );
}

/** An error the console itself states (bad JSON typed in, say), shown by <Problem> as its message. */
export class ConsoleError extends Error {
  override name = 'ConsoleError';
}
