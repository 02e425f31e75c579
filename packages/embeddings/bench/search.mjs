// Exact search without pgvector, and the pgvector path, on 10k chunks of 384 dimensions (ROWS, DIMS to change).
//   pnpm turbo build --filter @wds/embeddings... && node packages/embeddings/bench/search.mjs
// DATA=clustered (default; 100 topics, as real embeddings cluster) or DATA=random (uniform: the hardest case for HNSW).
// Part 1 compares ways to compute a dot product over real[] on plain PostgreSQL (the server of @wds/testkit:
// TEST_DATABASE_URL, else embedded PostgreSQL 15) and times searchChunks' exact path on the real schema.
// Part 2 times the same search in PGlite with pgvector: HNSW build, indexed and exact search, and their agreement.
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createDb, migrateToLatest, newId } from '@wds/db';
import { createDatabase, startTestPostgres } from '@wds/testkit';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { ensureVectorIndex, searchChunks } from '../dist/index.js';

const ROWS = Number(process.env.ROWS ?? 10_000);
const DIMS = Number(process.env.DIMS ?? 384);
const RUNS = 7;

const unit = (dims) => {
  const v = Array.from({ length: dims }, () => Math.random() * 2 - 1);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const literal = (v) => `{${v.map((x) => Math.fround(x).toPrecision(9)).join(',')}}`;
const CLUSTERED = (process.env.DATA ?? 'clustered') === 'clustered';
const centres = Array.from({ length: 100 }, () => unit(DIMS));
/** A random unit vector, or one near a random topic centre. */
const sample = () => {
  if (!CLUSTERED) return unit(DIMS);
  const centre = centres[Math.floor(Math.random() * centres.length)];
  const v = unit(DIMS).map((x, i) => centre[i] + x * 1.2);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const vectors = Array.from({ length: ROWS }, sample);
const query = sample();
const queries = Array.from({ length: 20 }, sample);

async function time(label, fn) {
  const times = [];
  let result;
  for (let r = 0; r < RUNS; r++) {
    const t = performance.now();
    result = await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(`  ${label.padEnd(34)} median ${times[RUNS >> 1].toFixed(1).padStart(7)} ms   min ${times[0].toFixed(1).padStart(7)} ms`);
  return result;
}

/** One workspace with ROWS table-row items of one chunk each, inserted in bulk. */
async function loadChunks(db) {
  const ws = newId();
  await db.insertInto('platform.workspaces').values({ id: ws, name: 'bench' }).execute();
  for (let i = 0; i < ROWS; i += 500) {
    const ids = vectors.slice(i, i + 500).map(() => newId());
    await db
      .insertInto('platform.embedding_items')
      .values(ids.map((id, k) => ({ id, workspace_id: ws, surface: 'table_row', table_name: 't', row_id: String(i + k), target_key: `t:${i + k}`, status: 'completed' })))
      .execute();
    const rows = ids.map((id, k) => sql`(${id}, 0, ${ws}, ${`row ${i + k}`}, ${literal(vectors[i + k])}::real[])`);
    await sql`INSERT INTO platform.embedding_chunks (item_id, chunk_index, workspace_id, content, embedding) VALUES ${sql.join(rows)}`.execute(db);
  }
  return ws;
}

// Part 1: plain PostgreSQL.
const server = await startTestPostgres();
const url = await createDatabase(server.url, { prefix: 'embbench' });
const client = new pg.Client({ connectionString: url });
await client.connect();
const { db } = createDb(url, { max: 2 });
try {
  console.log(`PostgreSQL ${(await client.query('SHOW server_version')).rows[0].server_version}, ${ROWS} x ${DIMS}-d, ${CLUSTERED ? 'clustered' : 'random'}`);
  await client.query(`
    CREATE TABLE chunks (id int PRIMARY KEY, embedding real[] NOT NULL);
    CREATE FUNCTION dot_sql(a real[], b real[]) RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
      AS $$ SELECT sum(x::float8 * y::float8) FROM unnest(a, b) AS t(x, y) $$;
    CREATE FUNCTION dot_plpgsql(a real[], b real[]) RETURNS double precision LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
      AS $$ DECLARE s float8 := 0; BEGIN
        FOR i IN 1 .. least(array_length(a, 1), array_length(b, 1)) LOOP s := s + a[i]::float8 * b[i]::float8; END LOOP;
        RETURN s; END $$;
    CREATE FUNCTION dot_foreach(a real[], b real[]) RETURNS double precision LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
      AS $$ DECLARE s float8 := 0; i int := 0; x real; BEGIN
        FOREACH x IN ARRAY a LOOP i := i + 1; s := s + x * b[i]; END LOOP;
        RETURN s; END $$;`);
  for (let i = 0; i < ROWS; i += 500) {
    const batch = vectors.slice(i, i + 500);
    await client.query(
      `INSERT INTO chunks VALUES ${batch.map((_, k) => `($${2 * k + 1}, $${2 * k + 2}::real[])`).join(',')}`,
      batch.flatMap((v, k) => [i + k, literal(v)]),
    );
  }
  await client.query('ANALYZE chunks');
  const top10 = (score) => `SELECT id, ${score} AS score FROM chunks ORDER BY score DESC LIMIT 10`;
  const variants = {
    'SQL function (unnest + sum)': top10('dot_sql(embedding, $1::real[])'),
    'plpgsql loop (subscripts)': top10('dot_plpgsql(embedding, $1::real[])'),
    'plpgsql FOREACH': top10('dot_foreach(embedding, $1::real[])'),
    'inline unnest subquery': top10('(SELECT sum(x::float8 * y::float8) FROM unnest(embedding, $1::real[]) AS t(x, y))'),
  };
  console.log(' top-10 by dot product over a bare real[] table:');
  for (const [label, text] of Object.entries(variants)) await time(label, () => client.query(text, [literal(query)]));

  await migrateToLatest(db);
  const ws = await loadChunks(db);
  await sql`ANALYZE`.execute(db);
  console.log(' searchChunks, exact path (platform.vector_dot):');
  await time('limit 10', () => searchChunks(db, { workspaceId: ws, surface: 'table_row', vector: query, limit: 10, useVector: false }));
} finally {
  await client.end();
  await db.destroy();
  await server.stop();
}

// Part 2: PGlite with pgvector.
const lite = await PGlite.create({ extensions: { vector } });
let tail = Promise.resolve();
const pool = {
  async connect() {
    let release;
    const previous = tail;
    tail = new Promise((resolve) => (release = resolve));
    await previous;
    return {
      async query(text, params) {
        const r = params.length === 0 ? (await lite.exec(text)).at(-1) : await lite.query(text, [...params]);
        return { command: r.command ?? 'SELECT', rowCount: r.affectedRows ?? r.rows.length, rows: r.rows };
      },
      release: () => release(),
    };
  },
  async end() {},
};
const liteDb = new Kysely({ dialect: new PostgresDialect({ pool }) });
try {
  await migrateToLatest(liteDb);
  await lite.exec('CREATE EXTENSION IF NOT EXISTS vector');
  let t = performance.now();
  const ws = await loadChunks(liteDb);
  console.log(`PGlite (PostgreSQL ${(await lite.query('SHOW server_version')).rows[0].server_version}), ${ROWS} x ${DIMS}-d`);
  console.log(`  load                               ${(performance.now() - t).toFixed(0)} ms`);
  t = performance.now();
  await ensureVectorIndex(liteDb, DIMS);
  console.log(`  ensureVectorIndex (fill + HNSW)    ${(performance.now() - t).toFixed(0)} ms`);
  await lite.exec('ANALYZE');
  const options = { workspaceId: ws, surface: 'table_row', vector: query, limit: 10 };
  await time('searchChunks, HNSW (ef_search 100)', () => searchChunks(liteDb, { ...options, useVector: true }));
  await time('searchChunks, HNSW (ef_search 400)', () => searchChunks(liteDb, { ...options, useVector: true, efSearch: 400 }));
  await time('searchChunks, exact (vector_dot)', () => searchChunks(liteDb, { ...options, useVector: false }));
  const exact = [];
  for (const vector of queries) {
    const q = { workspaceId: ws, surface: 'table_row', vector, limit: 10, useVector: false };
    exact.push(new Set((await searchChunks(liteDb, q)).map((h) => h.item_id)));
  }
  for (const efSearch of [40, 100, 200, 400, 1000]) {
    let found = 0;
    for (const [i, vector] of queries.entries()) {
      const q = { workspaceId: ws, surface: 'table_row', vector, limit: 10, useVector: true, efSearch };
      found += (await searchChunks(liteDb, q)).filter((h) => exact[i].has(h.item_id)).length;
    }
    console.log(`  recall@10 at ef_search ${String(efSearch).padEnd(4)}         ${((100 * found) / (10 * queries.length)).toFixed(1)}% (${queries.length} queries)`);
  }
} finally {
  await lite.close();
}
