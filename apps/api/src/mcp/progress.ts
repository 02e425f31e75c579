/**
 * Progress notifications of long tool calls (MCP `notifications/progress`, for a call whose `_meta` carries a
 * `progressToken`: the SDK client's `onprogress` sets it).
 *
 * The endpoint answers in JSON (`enableJsonResponse`), where the SDK's transport drops any message but the answer,
 * so the notifications travel here: a call that asked for progress and whose client accepts `text/event-stream` is
 * answered as before while nothing reports progress; once its operation reports (Transport.progress), the answer
 * becomes an SSE stream — each notification an event as it comes, then the JSON-RPC answer, then the end (the
 * Streamable HTTP transport's own form of a POST's answer). A call that never reports is answered in JSON, unchanged.
 */

type RequestId = string | number;

export type ProgressReport = (progress: number, total?: number, message?: string) => void;

interface Sink {
  progressToken: string | number;
  /** Called with each notification (JSON-RPC message text). */
  write(message: string): void;
}

/** One per endpoint: the calls of each session that asked for progress, by JSON-RPC id. */
export class ProgressStreams {
  private readonly sinks = new WeakMap<object, Map<RequestId, Sink>>();

  /** Whether `message` (a parsed POST body) is a tools/call asking for progress, and the request can take SSE. */
  static asks(message: unknown, accept: string | undefined): message is { id: RequestId; params: { _meta: { progressToken: string | number } } } {
    const m = message as { method?: unknown; id?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null;
    const token = m?.params?._meta?.progressToken;
    return (
      m?.method === 'tools/call' &&
      (typeof m.id === 'string' || typeof m.id === 'number') &&
      (typeof token === 'string' || typeof token === 'number') &&
      /\btext\/event-stream\b/.test(accept ?? '')
    );
  }

  /**
   * The answer of the call `id` of `session` (`answer`: the transport's JSON answer): that answer itself when it comes
   * before any progress, or else an SSE stream of the notifications and then the answer.
   */
  respond(session: object, sessionId: string, id: RequestId, progressToken: string | number, answer: Promise<Response>): Promise<Response> {
    let calls = this.sinks.get(session);
    if (!calls) {
      calls = new Map();
      this.sinks.set(session, calls);
    }
    const registry = calls;
    return new Promise<Response>((resolve, reject) => {
      const encoder = new TextEncoder();
      let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
      let open = true;
      const event = (text: string) => {
        if (!open || !controller) return;
        try {
          controller.enqueue(encoder.encode(`event: message\ndata: ${text}\n\n`));
        } catch {
          open = false; // the client went away; the call ends by its own signal
        }
      };
      const sink: Sink = {
        progressToken,
        write: (message) => {
          if (!controller) {
            // The first report: from now on the answer is a stream.
            const body = new ReadableStream<Uint8Array>({
              start: (c) => {
                controller = c;
              },
              cancel: () => {
                open = false;
              },
            });
            resolve(
              new Response(body, {
                status: 200,
                headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'mcp-session-id': sessionId },
              }),
            );
          }
          event(message);
        },
      };
      registry.set(id, sink);
      const done = () => {
        if (registry.get(id) === sink) registry.delete(id);
      };
      answer.then(
        async (response) => {
          done();
          if (!controller) return resolve(response);
          // Streaming already: the answer's JSON-RPC message is the stream's last event.
          const text = await response.text().catch(() => '');
          if (text) event(text);
          open = false;
          try {
            controller.close();
          } catch {
            // closed by the client
          }
        },
        (err: unknown) => {
          done();
          if (!controller) return reject(err);
          open = false;
          try {
            controller.error(err);
          } catch {
            // closed by the client
          }
        },
      );
    });
  }

  /** What the call `id` of `session` reports its progress with; undefined when it asked for none. */
  reporter(session: object, id: RequestId): ProgressReport | undefined {
    const sink = this.sinks.get(session)?.get(id);
    if (!sink) return undefined;
    let last = Number.NEGATIVE_INFINITY;
    return (progress, total, message) => {
      // The spec asks for progress that grows with each notification.
      if (!(progress > last)) return;
      last = progress;
      const params = { progressToken: sink.progressToken, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) };
      sink.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params }));
    };
  }
}
