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
  /** The parameter types of a prepared statement's Parse (pg would send its `types`, the row parsers, there). */
  parameterTypes: number[] = [];

  prepare(connection: unknown): void {
    const self = this as unknown as { types: unknown };
    const parsers = self.types;
    self.types = this.parameterTypes;
    try {
      (pg.Query.prototype as unknown as { prepare(c: unknown): void }).prepare.call(this, connection);
    } finally {
      self.types = parsers;
    }
  }

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

/** A read as a named prepared statement: parsed once per connection, then only bound and executed. */
export interface PreparedRead {
  name: string;
  values: string[];
  parameterTypes: number[];
}

/**
 * Prepared statements a connection keeps at most; past that it forgets them all (DEALLOCATE ALL) before the next
 * new one, so that a workspace sending endless shapes cannot grow its server process without bound.
 */
export const MAX_PREPARED_PER_CONNECTION = 200;

type Parsed = { connection: { parsedStatements: Record<string, string> } };

/** Drops one prepared statement on the server and from the client's record of what it has prepared. */
export async function forgetPrepared(client: pg.Client, name: string): Promise<void> {
  await client.query(`DEALLOCATE ${pg.escapeIdentifier(name)}`);
  delete (client as unknown as Parsed).connection.parsedStatements[name];
}

/**
 * The rows of a read, at most `maxRows + 1` of them (one more than the cap shows that the cap was passed). With
 * `prepared`, `text` is the statement of a named prepared statement and the values are its parameters.
 */
export async function runCappedRead(
  client: pg.Client,
  text: string,
  maxRows: number,
  types?: pg.CustomTypesConfig,
  prepared?: PreparedRead,
): Promise<pg.QueryResult> {
  if (prepared) {
    const known = (client as unknown as Parsed).connection.parsedStatements;
    if (known[prepared.name] === undefined && Object.keys(known).length >= MAX_PREPARED_PER_CONNECTION) {
      await client.query('DEALLOCATE ALL');
      for (const name of Object.keys(known)) delete known[name];
    }
  }
  return new Promise((resolve, reject) => {
    const config = { text, rows: maxRows + 1, types, ...(prepared ? { name: prepared.name, values: prepared.values } : {}) };
    const query = new CappedRead(config as pg.QueryConfig, undefined, (err: Error | null, result?: pg.QueryResult) =>
      err ? reject(err) : resolve(result as pg.QueryResult),
    );
    if (prepared) query.parameterTypes = prepared.parameterTypes;
    client.query(query as unknown as pg.QueryConfig);
  });
}
