import pg from 'pg';

type Connection = { execute(opts: { portal: string; rows: number }): void; sync(): void };
type QueryInternals = { portal: string; _checkForMultirow(): void; _result: { addCommandComplete(msg: unknown): void } };

/**
 * A read in one round trip through the extended protocol: Parse, Bind, Describe, Execute with a row limit, Sync.
 * The server stops after `rows` rows (PortalSuspended) and Sync ends the implicit transaction, so no more than
 * `rows` rows are ever read, with no cursor and no BEGIN/COMMIT around it. The statement travels alone: Parse
 * refuses a second one. (pg's own row-limited Query fetches the rest page by page; this one stops.)
 */
class CappedRead extends (pg.Query as unknown as new (config: pg.QueryConfig, values?: unknown, callback?: unknown) => object) {
  suspended = false;

  _getRows(connection: Connection, rows: number): void {
    connection.execute({ portal: (this as unknown as QueryInternals).portal, rows });
    connection.sync();
  }

  handlePortalSuspended(): void {
    this.suspended = true;
  }

  handleCommandComplete(msg: unknown): void {
    const self = this as unknown as QueryInternals;
    self._checkForMultirow();
    self._result.addCommandComplete(msg);
  }

  handleEmptyQuery(): void {}
}

/** The rows of a read, at most `maxRows + 1` of them (one more than the cap shows that the cap was passed). */
export function runCappedRead(client: pg.Client, text: string, maxRows: number, types?: pg.CustomTypesConfig): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const query = new CappedRead({ text, rows: maxRows + 1, types } as pg.QueryConfig, undefined, (err: Error | null, result?: pg.QueryResult) =>
      err ? reject(err) : resolve(result as pg.QueryResult),
    );
    client.query(query as unknown as pg.QueryConfig);
  });
}
