import '@wds/testkit';
import net from 'node:net';
import tls from 'node:tls';
import { createDatabase } from '@wds/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ByteBudget, ByteBudgetError, budgetedStream, isByteBudgetError } from '../src/byte-budget.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The budget of most tests: 1 MiB a row, 4 MiB a response. */
const budget: ByteBudget = { maxRowBytes: MiB, maxResponseBytes: 4 * MiB };
/** A DataRow of one text value of `n` bytes: type (1) + length (4) + column count (2) + value length (4) + value. */
const rowOf = (n: number) => n + 11;

let url: string;
const open: { end(): Promise<void> }[] = [];

beforeAll(async () => {
  url = await createDatabase(inject('pgServerUrl'), { prefix: 'wsql_bytes' });
});
afterAll(async () => {
  await Promise.all(open.map((c) => c.end().catch(() => undefined)));
  await Promise.all(proxies.map((p) => p.close()));
});

interface Guarded {
  client: pg.Client;
  /** What the client emitted as 'error' (a refused connection emits its refusal there too). */
  errors: unknown[];
}

async function connect(b: ByteBudget = budget, config: pg.ClientConfig = { connectionString: url }): Promise<Guarded> {
  const client = new pg.Client({ ...config, stream: budgetedStream(b) });
  const errors: unknown[] = [];
  client.on('error', (err) => errors.push(err));
  open.push(client);
  await client.connect();
  return { client, errors };
}

async function refusal(p: Promise<unknown>): Promise<ByteBudgetError> {
  const err = await p.then(
    () => {
      throw new Error('the query succeeded');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ByteBudgetError);
  return err as ByteBudgetError;
}

describe('one value too large', () => {
  it('a 600 MB value is refused from its header, before it is buffered, and the process lives on', async () => {
    const { client, errors } = await connect();
    const err = await refusal(client.query(`SELECT format('%600000000s', 'x') AS v`));
    expect(err.code).toBe('WDS_BYTE_BUDGET');
    expect(err.kind).toBe('row');
    expect(err.limit).toBe(MiB);
    // The size comes from the message header alone: the body was never read.
    expect(err.size).toBe(rowOf(600_000_000));
    expect(err.message).toBe(`a row of the result is larger than ${MiB} bytes`);
    expect(isByteBudgetError(err)).toEqual({ kind: 'row', limit: MiB, size: rowOf(600_000_000) });
    // The client is dead: its 'error' event carried the refusal, and it takes no more queries.
    await new Promise((resolve) => client.once('end', resolve));
    expect(isByteBudgetError(errors[0])).toMatchObject({ kind: 'row' });
    expect(isByteBudgetError(client)).toMatchObject({ kind: 'row', limit: MiB });
    await expect(client.query('SELECT 1')).rejects.toThrow(/not queryable/);
    // A new connection works.
    const next = await connect();
    expect((await next.client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('a row of 2 MiB is refused; the row limit is exact', async () => {
    const { client } = await connect();
    const err = await refusal(client.query(`SELECT repeat('x', ${2 * MiB}) AS v`));
    expect(err).toMatchObject({ kind: 'row', limit: MiB, size: rowOf(2 * MiB) });

    const fits = await connect();
    const { rows } = await fits.client.query(`SELECT repeat('x', ${MiB - 11}) AS v`);
    expect(rows[0].v).toHaveLength(MiB - 11);
    expect(fits.errors).toEqual([]);
    const over = await refusal(fits.client.query(`SELECT repeat('x', ${MiB - 10}) AS v`));
    expect(over).toMatchObject({ kind: 'row', size: MiB + 1 });
  });

  it('an error message quoting a huge value is refused too (kind message)', async () => {
    const { client } = await connect();
    const err = await refusal(client.query(`SELECT repeat('7', ${2 * MiB})::int AS v`));
    expect(err.kind).toBe('message');
    expect(err.limit).toBe(MiB);
    expect(isByteBudgetError(err)).toMatchObject({ kind: 'message' });
    // With a small value the same mistake is an ordinary PostgreSQL error on a healthy connection.
    const ok = await connect();
    await expect(ok.client.query(`SELECT 'abc'::int`)).rejects.toThrow(/invalid input syntax/);
    expect((await ok.client.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
  });
});

describe('a result too large', () => {
  it('10 rows of 600 KiB are refused by the response budget', async () => {
    const { client } = await connect();
    const err = await refusal(client.query(`SELECT repeat('x', ${600 * KiB}) AS v FROM generate_series(1, 10)`));
    expect(err).toMatchObject({ kind: 'response', limit: 4 * MiB });
    expect(err.size).toBeGreaterThan(4 * MiB);
    expect(err.message).toBe(`the result is larger than ${4 * MiB} bytes`);
  });

  it('results just under the limits pass, several in a row on one client: the budget restarts at ReadyForQuery', async () => {
    const { client, errors } = await connect();
    for (let i = 0; i < 5; i++) {
      // 6 × 600 KiB ≈ 3.6 MiB
      const { rows } = await client.query(`SELECT g, repeat('x', ${600 * KiB}) AS v FROM generate_series(1, 6) g`);
      expect(rows).toHaveLength(6);
      expect(rows.every((r) => r.v.length === 600 * KiB)).toBe(true);
    }
    // Many medium rows of varying size spread over many TCP chunks: ≈ 3.95 MiB in 4000 rows.
    const { rows } = await client.query(
      `SELECT g, repeat(chr(97 + g % 26), 700 + (g * 7919) % 600) AS v FROM generate_series(1, 4000) g`,
    );
    expect(rows).toHaveLength(4000);
    for (const r of rows) expect(r.v).toHaveLength(700 + ((r.g * 7919) % 600));
    expect((await client.query('SELECT 3 AS three')).rows).toEqual([{ three: 3 }]);
    expect(errors).toEqual([]);
  });

  it('a multi-statement simple query is one response', async () => {
    const { client } = await connect();
    const results = (await client.query(`SELECT repeat('x', 100) AS v; SELECT 2 AS two`)) as unknown as pg.QueryResult[];
    expect(results.map((r) => r.rows.length)).toEqual([1, 1]);
    expect(results[1]?.rows).toEqual([{ two: 2 }]);
    const part = `SELECT repeat('x', ${600 * KiB}) AS v FROM generate_series(1, 5)`;
    const err = await refusal(client.query(`${part}; ${part}`));
    expect(err.kind).toBe('response');
  });

  it('the extended protocol is guarded alike', async () => {
    const { client } = await connect();
    const q = (n: number) => client.query({ text: 'SELECT repeat($1::text, $2::int) AS v', values: ['y', n], queryMode: 'extended' } as pg.QueryConfig);
    expect((await q(10)).rows).toEqual([{ v: 'y'.repeat(10) }]);
    expect((await q(MiB - 11)).rows[0].v).toHaveLength(MiB - 11);
    const err = await refusal(q(2 * MiB));
    expect(err).toMatchObject({ kind: 'row', size: rowOf(2 * MiB) });
    const again = await connect();
    const many = await refusal(
      again.client.query({ text: `SELECT repeat('z', ${600 * KiB}) FROM generate_series(1, $1::int)`, values: [10], queryMode: 'extended' } as pg.QueryConfig),
    );
    expect(many.kind).toBe('response');
  });

  it('a cursor: each FETCH is its own response', async () => {
    const { client } = await connect();
    await client.query('BEGIN');
    await client.query(`DECLARE c CURSOR FOR SELECT g, repeat('x', ${600 * KiB}) AS v FROM generate_series(1, 30) g`);
    for (let i = 0; i < 3; i++) {
      const { rows } = await client.query('FETCH FORWARD 5 FROM c');
      expect(rows.map((r) => r.g)).toEqual([1, 2, 3, 4, 5].map((g) => g + 5 * i));
    }
    const err = await refusal(client.query('FETCH FORWARD 10 FROM c'));
    expect(err.kind).toBe('response');
  });
});

describe('with a pool', () => {
  it('a refused pool client is released with its error and the pool goes on', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2, stream: budgetedStream(budget) });
    open.push(pool);
    const poolErrors: unknown[] = [];
    pool.on('error', (err) => poolErrors.push(err));
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);

    const client = await pool.connect();
    // A checked-out client has no error listener of the pool's: the caller must add one.
    const onError = (_err: Error) => undefined;
    client.on('error', onError);
    let caught: unknown;
    try {
      await client.query(`SELECT repeat('x', ${2 * MiB})`);
    } catch (err) {
      caught = err;
    } finally {
      client.removeListener('error', onError);
      client.release(caught instanceof Error ? caught : undefined);
    }
    expect(isByteBudgetError(caught)).toMatchObject({ kind: 'row' });
    // pool.query() attaches its own listener.
    expect(isByteBudgetError(await pool.query(`SELECT repeat('x', ${2 * MiB})`).catch((e: unknown) => e))).toMatchObject({ kind: 'row' });
    expect((await pool.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    expect(poolErrors).toEqual([]);
  });

  it('the startup exchange does not count: a 1 KiB budget still connects', async () => {
    const { client } = await connect({ maxRowBytes: KiB, maxResponseBytes: KiB });
    for (let i = 0; i < 3; i++) expect((await client.query(`SELECT repeat('x', 900) AS v`)).rows[0].v).toHaveLength(900);
    expect(await refusal(client.query(`SELECT repeat('x', 500) AS v FROM generate_series(1, 3)`))).toMatchObject({ kind: 'response', limit: KiB });
  });

  it('rejects a budget that is not a positive number', () => {
    expect(() => budgetedStream({ maxRowBytes: 0, maxResponseBytes: 1 })).toThrow(TypeError);
    expect(() => budgetedStream({ maxRowBytes: 1, maxResponseBytes: Number.NaN })).toThrow(TypeError);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Through a proxy that cuts the server's bytes into pieces of 1 to 13 bytes, optionally terminating TLS the way a
// PostgreSQL server does (SSLRequest, 'S', handshake): every header ends up split at every position.

/** A self-signed certificate for 127.0.0.1 / localhost, for this test only. */
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHYdrr7fUCKTSVewU
QfWczazQe34KJm94UqCyslV1VSChRANCAATZPe8oDbijqQr8SpoQ5q1e1TxJzrhb
yaTrE2eXZZjXK/95HR3J8i4IoVN0o2iYrFerNNGh1RrkYK0d0R3ysWOi
-----END PRIVATE KEY-----
`;
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmjCCAUGgAwIBAgIUKJ/R+ieqLMhN2bHK4yDjCe2al94wCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEyNDEzMTUwOFoYDzIxMjYxMDMx
MTMxNTA4WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATZPe8oDbijqQr8SpoQ5q1e1TxJzrhbyaTrE2eXZZjXK/95HR3J8i4I
oVN0o2iYrFerNNGh1RrkYK0d0R3ysWOio28wbTAdBgNVHQ4EFgQUuVKSSMJ0N/Xj
uTAuAUE0AL9RgA8wHwYDVR0jBBgwFoAUuVKSSMJ0N/XjuTAuAUE0AL9RgA8wDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDRwAwRAIgasGVYd6U6OqxWMr5YPkf6Tl+PYqQTb1sAS4ViF4c5ucCIBio
uMsH7RsAZzoZmO3TcOOcAUUGhKApwDNtwTUMcmBq
-----END CERTIFICATE-----
`;

interface Proxy {
  port: number;
  close(): Promise<void>;
}
const proxies: Proxy[] = [];

async function startProxy(opts: { tls: boolean }): Promise<Proxy> {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((front) => {
    const back = net.connect(Number(target.port), target.hostname);
    sockets.add(front);
    sockets.add(back);
    front.setNoDelay(true);
    const ends = (a: net.Socket, b: net.Socket) => {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    };
    ends(front, back);
    ends(back, front);
    const relay = (down: net.Socket) => {
      let seed = 7;
      back.on('data', async (chunk: Buffer) => {
        back.pause();
        for (let i = 0; i < chunk.length && !down.destroyed; ) {
          seed = (seed * 1103515245 + 12345) % 2147483648;
          const n = 1 + (seed % 13);
          down.write(chunk.subarray(i, i + n));
          i += n;
          await new Promise((resolve) => setImmediate(resolve));
        }
        back.resume();
      });
    };
    if (!opts.tls) {
      front.pipe(back);
      relay(front);
      return;
    }
    front.once('data', (first: Buffer) => {
      // SSLRequest: int32 length 8, int32 code 80877103.
      if (first.length !== 8 || first.readUInt32BE(4) !== 80877103) {
        front.destroy();
        return;
      }
      front.write('S');
      const secure = new tls.TLSSocket(front, { isServer: true, key: TEST_KEY, cert: TEST_CERT });
      secure.on('error', () => back.destroy());
      secure.pipe(back);
      relay(secure as net.Socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: Proxy = {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
  proxies.push(proxy);
  return proxy;
}

const small: ByteBudget = { maxRowBytes: 4096, maxResponseBytes: 64 * KiB };

for (const viaTls of [false, true]) {
  describe(viaTls ? 'TLS, headers split across chunks' : 'headers split across chunks', () => {
    let proxy: Proxy;
    beforeAll(async () => {
      proxy = await startProxy({ tls: viaTls });
    });

    const connectVia = async () => {
      const target = new URL(url);
      const g = await connect(small, {
        host: '127.0.0.1',
        port: proxy.port,
        user: decodeURIComponent(target.username),
        password: decodeURIComponent(target.password),
        database: decodeURIComponent(target.pathname.slice(1)),
        ssl: viaTls ? { ca: TEST_CERT } : false,
      });
      const stream = (g.client as unknown as { connection: { stream: { encrypted?: boolean } } }).connection.stream;
      expect(stream.encrypted === true).toBe(viaTls);
      return g;
    };

    it('tracks message boundaries: no false refusal, results intact, up to the exact row limit', async () => {
      const { client, errors } = await connectVia();
      for (let round = 0; round < 3; round++) {
        const { rows } = await client.query(`SELECT g, repeat(chr(97 + g % 26), (g * 37 + ${round}) % 1200) AS v FROM generate_series(1, 40) g`);
        expect(rows).toHaveLength(40);
        for (const r of rows) expect(r.v).toBe(String.fromCharCode(97 + (r.g % 26)).repeat((r.g * 37 + round) % 1200));
      }
      const exact = await client.query(`SELECT repeat('x', ${4096 - 11}) AS v`);
      expect(exact.rows[0].v).toHaveLength(4096 - 11);
      // 15 rows of 4085 bytes: 61,440 bytes of rows, just under 64 KiB with the other messages.
      const full = await client.query(`SELECT repeat('x', ${4096 - 11}) AS v FROM generate_series(1, 15)`);
      expect(full.rows).toHaveLength(15);
      expect(errors).toEqual([]);
      const err = await refusal(client.query(`SELECT repeat('x', ${4096 - 10}) AS v`));
      expect(err).toMatchObject({ kind: 'row', limit: 4096, size: 4097 });
    });

    it('refuses a response over budget', async () => {
      const { client } = await connectVia();
      const err = await refusal(client.query(`SELECT repeat('x', 4000) AS v FROM generate_series(1, 20)`));
      expect(err).toMatchObject({ kind: 'response', limit: 64 * KiB });
      const again = await connectVia();
      expect((await again.client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    });

    it('refuses a 600 MB value', async () => {
      const { client } = await connectVia();
      const err = await refusal(client.query(`SELECT format('%600000000s', 'x') AS v`));
      expect(err).toMatchObject({ kind: 'row', size: rowOf(600_000_000) });
    });
  });
}

describe('TLS without the connection hook', () => {
  it('fails closed rather than run unguarded', async () => {
    const socket = budgetedStream(budget).call(undefined, { ssl: true });
    const err = await new Promise<Error>((resolve) => {
      socket.once('error', resolve);
      socket.connect(1, '127.0.0.1');
    });
    expect(err.message).toMatch(/cannot guard this TLS connection/);
  });
});
