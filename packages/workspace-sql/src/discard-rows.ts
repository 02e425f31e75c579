import pg from 'pg';

/**
 * A query whose result rows are counted, not kept. A write without a RETURNING of the user's own still returns one
 * row per written row (the policy row check the rewriter puts in RETURNING); a million-row UPDATE must not build a
 * million row objects in the API's heap only to throw them away.
 */
class DiscardRows extends (pg.Query as unknown as new (config: pg.QueryConfig, values?: unknown, callback?: unknown) => object) {
  handleDataRow(): void {}
}

/** Runs `text` through the extended protocol (one statement only) and answers its affected-row count. */
export function runCountingRows(client: pg.Client, text: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const query = new DiscardRows({ text, queryMode: 'extended' } as pg.QueryConfig, undefined, (err: Error | null, result?: pg.QueryResult) =>
      err ? reject(err) : resolve(result?.rowCount ?? 0),
    );
    client.query(query as unknown as pg.QueryConfig);
  });
}
