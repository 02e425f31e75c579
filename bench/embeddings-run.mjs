// Embeddings: the local model's throughput (Universal Sentence Encoder lite, 512-d), texts/s with one call per text
// against batches of 64; then search over N stored rows (10 000 and 100 000; BENCH_EMBED_ROWS=10000 for a quick
// run) on both vector paths of @wds/embeddings, each checked against the exact top 10 computed in JavaScript over the
// same vectors: the portable path (real[] + platform.vector_dot, an exact scan) on PostgreSQL, the same exact search
// through the in-process index (ExactVectorIndex: vectors loaded once, scored in worker threads), and the pgvector
// path (HNSW) on in-process PGlite, with PGlite's own exact scan as that engine's baseline (BENCH_EMBED_PGLITE=0
// leaves PGlite out: its index build takes minutes at 100k). Prints load and index-build times, p50/p95 latency,
// recall@10 and ratios; never an assertion. Progress lines go to stderr.
//
// PGlite runs in a worker thread of this same file: it is single-threaded WASM and blocks its thread for as long as
// a statement runs (the HNSW build at 100k takes minutes), so the main thread stays free to say it is still alive.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { createDb, migrateToLatest, newId, sql } from '@wds/db';
import {
  ExactVectorIndex,
  HASHING_MODEL,
  completeItem,
  createEmbedder,
  EXACT_SCAN_MAX_CHUNKS,
  detectVectorSupport,
  ensureVectorIndex,
  searchChunks,
  upsertPending,
} from '@wds/embeddings';
import { createDatabase, dropDatabase, startTestPostgres } from '@wds/testkit';
import { Kysely, PostgresDialect } from 'kysely';

const SIZES = (process.env.BENCH_EMBED_ROWS ?? '10000,100000').split(',').map(Number);
const WITH_PGLITE = process.env.BENCH_EMBED_PGLITE !== '0';
const DIMS = 384; // the hashing embedder's default
const QUERIES = 50;
const K = 10;
// An exact scan over 100k rows takes seconds per query (tens of seconds on PGlite): exact paths stop starting new
// queries after this long, having run at least MIN_EXACT. The HNSW path always runs all QUERIES.
const EXACT_BUDGET_MS = 60_000;
const MIN_EXACT = 3;
// The first rows of each load go through completeItem, the package's write path, one transaction per item; the rest
// are written in bulk with the same rows (completeItem ran at 90 to 600 items/s here: minutes for 100k).
const VIA_COMPLETE = 500;
const BULK_ROWS = 500;
// PGlite's default maintenance_work_mem (64MB) does not hold the HNSW graph of 100k 384-d vectors; pgvector then
// builds on disk, and a trial build ran for over 10 minutes before it was stopped (about 5 minutes with 1GB). A
// server deployment would raise it for the build the same way.
const MAINTENANCE_WORK_MEM = '1GB';
// HNSW forced (exactScanMaxChunks: 0) at pgvector-ish narrow width and at searchChunks' default (1000), to show what
// recall costs; the default policy row scans exactly with pgvector's distance up to EXACT_SCAN_MAX_CHUNKS chunks.
const NARROW_EF_SEARCH = 100;

const log = (line) => {
  if (isMainThread) console.error(`  · ${line}`);
  else parentPort.postMessage({ progress: line });
};
const sec = (ms) => (ms / 1000).toFixed(1);
const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
};

/** A deterministic pseudo-random source (mulberry32), as in the package's tests. */
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Made-up sentences with some structure, so that vectors differ but are not uniformly random: a vocabulary of
 * 6000 syllable words drawn with a skew (some words are common), 200 topics of 40 words each (a sentence takes about
 * a third of its words from its topic, so sentences cluster) and a few function words that appear everywhere.
 */
function sentenceGenerator(seed) {
  const random = seededRandom(seed);
  const pick = (xs) => xs[Math.floor(random() * xs.length)];
  const onsets = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'cl', 'dr', 'fr', 'gr', 'pl', 'st', 'tr', 'sh', 'ch', 'th'];
  const vowels = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou', 'io'];
  const codas = ['', '', 'n', 'r', 's', 't', 'l', 'm', 'nd', 'st', 'rk', 'ng'];
  const word = () => Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(onsets) + pick(vowels)).join('') + pick(codas);
  const vocabulary = [...new Set(Array.from({ length: 8000 }, word))].slice(0, 6000);
  const topics = Array.from({ length: 200 }, () => Array.from({ length: 40 }, () => pick(vocabulary)));
  const functionWords = ['the', 'a', 'of', 'to', 'and', 'in', 'for', 'on', 'with', 'is', 'was', 'by', 'at', 'from'];
  return () => {
    const topic = pick(topics);
    const words = [];
    for (let i = 6 + Math.floor(random() * 10); i > 0; i--) {
      const x = random();
      words.push(x < 0.25 ? pick(functionWords) : x < 0.6 ? pick(topic) : vocabulary[Math.floor(random() ** 2 * vocabulary.length)]);
    }
    return words.join(' ');
  };
}

const rowVector = (store, i) => store.subarray(i * DIMS, (i + 1) * DIMS);
/** `real[]` literal of float32 values: 9 significant digits read back as the same float32 (as the package writes). */
const realArray = (v) => `{${Array.from(v, (x) => String(Number(x.toPrecision(9)))).join(',')}}`;

/**
 * Writes rows 0..n-1 as completed table_row items of one new workspace, one chunk each, then VACUUM ANALYZE (fresh
 * tables have no statistics until autovacuum runs; without them the exact scan took a 10x slower plan in a trial).
 */
async function load(db, engine, n, texts, store) {
  const workspaceId = newId();
  await db.insertInto('platform.workspaces').values({ id: workspaceId, name: 'bench' }).execute();
  const started = performance.now();
  const ids = [];
  for (let i = 0; i < n; i += 10_000) {
    const items = [];
    for (let r = i; r < Math.min(n, i + 10_000); r++) items.push({ workspaceId, surface: 'table_row', tableName: 'docs', rowId: String(r) });
    ids.push(...(await upsertPending(db, items)));
  }
  log(`${engine} ${n}: upsertPending of ${n} items in ${sec(performance.now() - started)} s`);

  const viaComplete = Math.min(n, VIA_COMPLETE);
  let t = performance.now();
  for (let i = 0; i < viaComplete; i++) {
    const chunks = [{ content: texts[i], embedding: Array.from(rowVector(store, i)) }];
    await completeItem(db, ids[i], { model: HASHING_MODEL, dimensions: DIMS, contentHash: null, chunks }, { useVector: false });
  }
  const completeRate = viaComplete / ((performance.now() - t) / 1000);

  // The rest: what completeItem writes (the item completed, its chunk with the unit vector as real[]), in bulk.
  t = performance.now();
  await sql`
    UPDATE platform.embedding_items
    SET status = 'completed', error = null, model = ${HASHING_MODEL}, dimensions = ${DIMS}, content_hash = null,
        completed_at = now(), updated_at = now()
    WHERE workspace_id = ${workspaceId} AND status = 'pending'`.execute(db);
  for (let i = viaComplete; i < n; i += BULK_ROWS) {
    const values = [];
    for (let r = i; r < Math.min(n, i + BULK_ROWS); r++) {
      values.push(sql`(${ids[r]}, 0, ${workspaceId}, ${texts[r]}, ${realArray(rowVector(store, r))}::real[])`);
    }
    await sql`
      INSERT INTO platform.embedding_chunks (item_id, chunk_index, workspace_id, content, embedding)
      VALUES ${sql.join(values)}`.execute(db);
    const done = Math.min(n, i + BULK_ROWS);
    if (done % 20_000 === 0 || done === n) log(`${engine} ${n}: ${done} rows written (${sec(performance.now() - started)} s)`);
  }
  await sql`VACUUM ANALYZE platform.embedding_items, platform.embedding_chunks`.execute(db);
  return { workspaceId, loadMs: performance.now() - started, completeRate };
}

/** Runs the queries one after the other (a warm-up first when `warm`); stops early after `budgetMs`. */
async function measure(db, workspaceId, queries, useVector, { budgetMs = Infinity, warm = false, efSearch, exactScanMaxChunks, index, label }) {
  const search = (vector) => searchChunks(db, { workspaceId, surface: 'table_row', vector, limit: K, useVector, efSearch, exactScanMaxChunks, index });
  if (warm) await search(queries[0]);
  const latencies = [];
  const hits = [];
  const started = performance.now();
  for (const query of queries) {
    if (latencies.length >= MIN_EXACT && performance.now() - started > budgetMs) break;
    const t = performance.now();
    const found = await search(query);
    latencies.push(performance.now() - t);
    hits.push(found.map((h) => Number(h.row_id)));
    if (latencies.length % 10 === 0 || performance.now() - t > 5000) log(`${label}: ${latencies.length} queries (${sec(performance.now() - started)} s)`);
  }
  return { latencies, hits };
}

/** Kysely over PGlite, as in packages/embeddings/test/pglite-dialect.ts: one connection, handed out in turn. */
function pgliteDb(pglite) {
  let tail = Promise.resolve();
  const pool = {
    async connect() {
      let release;
      const previous = tail;
      tail = new Promise((resolve) => {
        release = resolve;
      });
      await previous;
      return {
        async query(text, parameters) {
          const result = parameters.length === 0 ? (await pglite.exec(text)).at(-1) : await pglite.query(text, [...parameters]);
          return {
            command: result.command ?? text.trim().split(/\s+/, 1)[0].toUpperCase(),
            rowCount: result.affectedRows ?? result.rows.length,
            rows: result.rows,
          };
        },
        release: () => release(),
      };
    },
    async end() {},
  };
  return new Kysely({ dialect: new PostgresDialect({ pool }) });
}

/** The worker: load N rows into a fresh PGlite, build the HNSW index, search on both paths. */
async function pgliteRun({ n, texts, store, queries }) {
  const rows = new Float32Array(store);
  const queryVectors = Array.from({ length: queries.byteLength / 4 / DIMS }, (_, q) => Array.from(new Float32Array(queries, q * DIMS * 4, DIMS)));
  const pglite = await PGlite.create({ extensions: { vector } });
  try {
    const db = pgliteDb(pglite);
    await migrateToLatest(db);
    if (!(await detectVectorSupport(db))) throw new Error('PGlite: no pgvector');
    const { rows: info } = await pglite.query(
      `SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS pgvector, current_setting('server_version') AS version`,
    );
    const loaded = await load(db, 'PGlite', n, texts, rows);
    await pglite.exec(`SET maintenance_work_mem = '${MAINTENANCE_WORK_MEM}'`);
    log(`PGlite ${n}: building the HNSW index (ensureVectorIndex: fills embedding_v from real[], then CREATE INDEX)`);
    parentPort.postMessage({ phase: `PGlite ${n}: building the HNSW index` });
    const t = performance.now();
    const outcome = await ensureVectorIndex(db, DIMS);
    const indexMs = performance.now() - t;
    log(`PGlite ${n}: index ${outcome} in ${sec(indexMs)} s`);
    await pglite.exec('ANALYZE platform.embedding_chunks');
    const policy = await measure(db, loaded.workspaceId, queryVectors, true, { warm: true, label: `PGlite ${n} default` });
    const narrow = await measure(db, loaded.workspaceId, queryVectors, true, { exactScanMaxChunks: 0, efSearch: NARROW_EF_SEARCH, label: `PGlite ${n} HNSW ef ${NARROW_EF_SEARCH}` });
    const hnsw = await measure(db, loaded.workspaceId, queryVectors, true, { exactScanMaxChunks: 0, label: `PGlite ${n} HNSW ef 1000` });
    const exact = await measure(db, loaded.workspaceId, queryVectors, false, { budgetMs: EXACT_BUDGET_MS, label: `PGlite ${n} exact` });
    return { ...loaded, indexMs, policy, narrow, hnsw, exact, ...info[0] };
  } finally {
    await pglite.close();
  }
}

if (!isMainThread) {
  parentPort.postMessage({ result: await pgliteRun(workerData) });
} else {
  await main();
}

function runPgliteWorker(data) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: data });
    let phase = 'starting';
    let last = performance.now();
    const ticker = setInterval(() => {
      if (performance.now() - last > 30_000) log(`${phase}: still running (${sec(performance.now() - last)} s since the last line)`);
    }, 30_000);
    worker.on('message', (message) => {
      if (message.progress) {
        log(message.progress);
        last = performance.now();
      }
      if (message.phase) phase = message.phase;
      if (message.result) resolve(message.result);
    });
    worker.on('error', reject);
    worker.on('exit', (code) => {
      clearInterval(ticker);
      if (code !== 0) reject(new Error(`PGlite worker exited with ${code}`));
    });
  });
}

async function main() {
  // --- 1. The local model ---------------------------------------------------------------------------------------
  const subjects = ['The invoice', 'Our new intern', 'The quarterly report', 'A customer in Lyon', 'The build server', 'My neighbour', 'The marketing team', 'This spreadsheet'];
  const verbs = ['was sent', 'needs a review', 'failed again', 'arrived late', 'looks much better', 'was archived', 'mentions the budget', 'is waiting for approval'];
  const tails = ['yesterday.', 'before the audit.', 'after lunch.', 'on Friday.'];
  const sentences = subjects.flatMap((s) => verbs.flatMap((v) => tails.map((t) => `${s} ${v} ${t}`)));
  const local = createEmbedder({ kind: 'local' });
  let t = performance.now();
  await local.embed([sentences[0]]);
  const coldMs = performance.now() - t;
  await local.embed(sentences.slice(0, 64)); // warm: both shapes have run once
  t = performance.now();
  for (const text of sentences) await local.embed([text]);
  const singleMs = performance.now() - t;
  t = performance.now();
  for (let i = 0; i < sentences.length; i += 64) await local.embed(sentences.slice(i, i + 64));
  const batchMs = performance.now() - t;
  const rate = (ms) => sentences.length / (ms / 1000);
  console.log(`Local model (${local.model}, ${local.dimensions}-d, TF.js WASM), ${sentences.length} short sentences, warm\n`);
  console.log(`first call (model load + 1 text): ${(coldMs / 1000).toFixed(2)} s`);
  console.log(`one call per text:   ${rate(singleMs).toFixed(1).padStart(6)} texts/s  (${(singleMs / sentences.length).toFixed(1)} ms a text)`);
  console.log(`batches of 64:       ${rate(batchMs).toFixed(1).padStart(6)} texts/s  (${(batchMs / sentences.length).toFixed(1)} ms a text)`);
  console.log(`batch / single:      ${(rate(batchMs) / rate(singleMs)).toFixed(2)}x\n`);

  // --- 2. Data and ground truth ---------------------------------------------------------------------------------
  const maxN = Math.max(...SIZES);
  const next = sentenceGenerator(20240607);
  const texts = Array.from({ length: maxN }, next);
  const queryTexts = Array.from({ length: QUERIES }, next); // fresh sentences from the same generator, not stored rows
  const hashing = createEmbedder({ kind: 'hashing' });
  t = performance.now();
  // Shared with the PGlite worker rather than copied.
  const store = new Float32Array(new SharedArrayBuffer(maxN * DIMS * 4));
  for (let i = 0; i < maxN; i += 10_000) {
    const vectors = await hashing.embed(texts.slice(i, i + 10_000));
    for (const [j, v] of vectors.entries()) store.set(v, (i + j) * DIMS);
  }
  const queries = new Float32Array(new SharedArrayBuffer(QUERIES * DIMS * 4));
  for (const [q, v] of (await hashing.embed(queryTexts)).entries()) queries.set(v, q * DIMS);
  const hashMs = performance.now() - t;
  const queryVectors = Array.from({ length: QUERIES }, (_, q) => Array.from(queries.subarray(q * DIMS, (q + 1) * DIMS)));
  log(`${maxN + QUERIES} sentences embedded by the hashing embedder in ${sec(hashMs)} s`);

  const score = (q, row) => {
    let s = 0;
    const v = rowVector(store, row);
    const w = queryVectors[q];
    for (let d = 0; d < DIMS; d++) s += v[d] * w[d];
    return s;
  };
  /** For each query the 10th best score over rows 0..n-1 (exact, float32 values as stored, float64 sums). */
  function groundTruth(n) {
    return queryVectors.map((_, q) => {
      const top = [];
      for (let row = 0; row < n; row++) {
        const s = score(q, row);
        if (top.length < K || s > top[K - 1]) {
          top.push(s);
          top.sort((a, b) => b - a);
          if (top.length > K) top.pop();
        }
      }
      return top[K - 1];
    });
  }
  // A hit counts when its true score reaches the 10th best (less 1e-6, float32 rounding): ties at the boundary are
  // all right answers.
  const recall = (hits, tenth) => {
    let found = 0;
    hits.forEach((rows, q) => {
      for (const row of rows) if (score(q, row) >= tenth[q] - 1e-6) found++;
    });
    return found / (hits.length * K);
  };

  // --- 3. Both paths at each size -------------------------------------------------------------------------------
  const server = await startTestPostgres();
  const results = [];
  let pgHasVector = null;
  let pgVersion = '';
  let liteInfo = {};
  try {
    for (const n of SIZES) {
      t = performance.now();
      const tenth = groundTruth(n);
      log(`N=${n}: exact top ${K} in JavaScript for ${QUERIES} queries in ${sec(performance.now() - t)} s`);

      // Path A: PostgreSQL, real[] and the exact scan.
      const url = await createDatabase(server.url, { prefix: 'benchemb' });
      const { db, pool } = createDb(url, { max: 4 });
      const index = new ExactVectorIndex({ pool, onError: (err) => log(`index error: ${err.stack ?? err}`) });
      try {
        await migrateToLatest(db);
        pgHasVector ??= await detectVectorSupport(db);
        pgVersion = (await sql`SELECT current_setting('server_version') AS v`.execute(db)).rows[0].v;
        const loaded = await load(db, 'PostgreSQL', n, texts, store);
        const exact = await measure(db, loaded.workspaceId, queryVectors, false, { budgetMs: EXACT_BUDGET_MS, label: `PostgreSQL ${n} exact` });
        const exactRow = { n, path: 'PostgreSQL exact (real[])', loadMs: loaded.loadMs, completeRate: loaded.completeRate, ...summary(exact, tenth) };
        results.push(exactRow);

        // Path A': the same exact search through the in-process index. The first search loads the surface (its
        // time is the 'load s' column); the others find it loaded.
        t = performance.now();
        await searchChunks(db, { workspaceId: loaded.workspaceId, surface: 'table_row', vector: queryVectors[0], limit: K, useVector: false, index });
        const coldMs = performance.now() - t;
        const viaIndex = await measure(db, loaded.workspaceId, queryVectors, false, { index, label: `PostgreSQL ${n} in-process index` });
        const stats = index.stats();
        if (stats.fallbacks > 0) log(`in-process index ${n}: ${stats.fallbacks} searches fell back to SQL`);
        const row = { n, path: `in-process index (${stats.threads} threads)`, loadMs: coldMs, memory: stats.bytes, ...summary(viaIndex, tenth) };
        results.push({ ...row, vsExact: row.p50 / exactRow.p50 });
      } finally {
        await index.close();
        await db.destroy();
        await dropDatabase(url);
      }

      // Path B: PGlite with pgvector, in the worker.
      if (!WITH_PGLITE) continue;
      log(`PGlite ${n}: starting the worker`);
      const lite = await runPgliteWorker({ n, texts: texts.slice(0, n), store: store.buffer, queries: queries.buffer });
      liteInfo = lite;
      const exact = { path: 'PGlite exact (real[])', ...summary(lite.exact, tenth) };
      const policy = {
        path: n <= EXACT_SCAN_MAX_CHUNKS ? 'pgvector default (exact <=>)' : 'pgvector default (HNSW)',
        indexMs: lite.indexMs,
        ...summary(lite.policy, tenth),
      };
      const narrow = { path: `HNSW ef_search ${NARROW_EF_SEARCH}`, ...summary(lite.narrow, tenth) };
      const hnsw = { path: `HNSW ef_search 1000 (pgv ${lite.pgvector})`, ...summary(lite.hnsw, tenth) };
      results.push(
        { n, loadMs: lite.loadMs, completeRate: lite.completeRate, ...exact },
        { n, ...policy, vsExact: policy.p50 / exact.p50 },
        { n, ...narrow, vsExact: narrow.p50 / exact.p50 },
        { n, ...hnsw, vsExact: hnsw.p50 / exact.p50 },
      );
    }
  } finally {
    await server.stop();
  }

  function summary({ latencies, hits }, tenth) {
    return { queries: latencies.length, p50: percentile(latencies, 0.5), p95: percentile(latencies, 0.95), recall: recall(hits, tenth) };
  }

  // --- 4. Report ------------------------------------------------------------------------------------------------
  console.log(`Search, top ${K} of N table rows of one workspace, ${DIMS}-d vectors from the hashing embedder (${HASHING_MODEL})`);
  console.log(`over made-up sentences (${sec(hashMs)} s to embed ${maxN + QUERIES}); ${QUERIES} queries are fresh sentences from the same generator.`);
  console.log(`Ground truth: exact top ${K} by dot product in JavaScript. PostgreSQL ${pgVersion} (${server.kind}; pgvector there: ${pgHasVector ? 'yes' : 'no'});`);
  if (WITH_PGLITE) console.log(`PGlite (PostgreSQL ${liteInfo.version}) in a worker thread: single-threaded WASM, maintenance_work_mem ${MAINTENANCE_WORK_MEM} for the build.`);
  console.log('');
  const header = ['N', 'path', 'load s', 'index s', 'queries', 'p50 ms', 'p95 ms', 'recall@10', 'p50 vs exact scan, same engine'];
  const widths = [7, 30, 7, 8, 8, 9, 9, 10, 0];
  const line = (cells) => cells.map((c, i) => (i === 1 || i === cells.length - 1 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  console.log(line(header));
  for (const r of results) {
    const ms = (x) => x.toFixed(x < 10 ? 2 : x < 100 ? 1 : 0);
    console.log(
      line([
        r.n,
        r.path,
        r.loadMs === undefined ? '' : sec(r.loadMs),
        r.indexMs === undefined ? '' : sec(r.indexMs),
        `${r.queries}/${QUERIES}`,
        ms(r.p50),
        ms(r.p95),
        r.recall.toFixed(3),
        r.vsExact === undefined ? '' : `${r.vsExact.toFixed(4)}x (${(1 / r.vsExact).toFixed(0)}x faster)`,
      ]),
    );
  }
  console.log('');
  for (const r of results.filter((x) => x.completeRate)) {
    console.log(`write path, ${r.path.split(' ')[0]} ${r.n}: completeItem ${r.completeRate.toFixed(0)} items/s (first ${Math.min(r.n, VIA_COMPLETE)} items, one transaction each); the rest in bulk INSERTs of ${BULK_ROWS} rows`);
  }
  console.log(`'pgvector default' is searchChunks as the service calls it: an exact scan with pgvector's distance up to ${EXACT_SCAN_MAX_CHUNKS} chunks of a surface, HNSW at ef_search 1000 above; the HNSW rows force the index. m and ef_construction are pgvector's defaults.`);
  console.log(`load s: upsertPending + completeItem/bulk writes + VACUUM ANALYZE; for the in-process index, its first search (the surface's COPY into memory, then the query). index s: ensureVectorIndex (fill embedding_v, build HNSW).`);
  for (const r of results.filter((x) => x.memory)) console.log(`in-process index at ${r.n}: ${(r.memory / 2 ** 20).toFixed(1)} MiB held (${(r.memory / r.n).toFixed(0)} bytes a chunk with its item)`);
  console.log(`Exact scans stop starting queries after ${EXACT_BUDGET_MS / 1000} s (at least ${MIN_EXACT}): 'queries' says how many ran; HNSW runs all ${QUERIES}.`);
  const low = results.filter((r) => r.recall < 0.95);
  if (low.length) console.log(`recall@10 below 0.95: ${low.map((r) => `${r.path} at ${r.n} (${r.recall.toFixed(3)})`).join('; ')}`);
}
