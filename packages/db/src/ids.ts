import { randomFillSync } from 'node:crypto';

/**
 * Ids are UUIDv7 (RFC 9562): time-ordered, so lists sorted by id are sorted by creation. Within one process they
 * are strictly increasing, as the `uuid` package makes them (the same layout: a 31-bit counter seeded at random
 * each millisecond in rand_a and rand_b, 42 random bits after it), but the random bits are drawn from a pool
 * filled 256 ids at a time: one `randomFillSync` call per id cost ~1.7% of the API's CPU per request (issue 16).
 */
const POOL_IDS = 256;
const pool = new Uint8Array(16 * POOL_IDS);
let poolAt = pool.length;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The millisecond of the last id and its counter (may run ahead of the clock when a millisecond's ids overflow). */
let lastMs = Number.NEGATIVE_INFINITY;
let seq = 0;

export function newId(): Uuid {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += 16;
  const now = Date.now();
  if (now > lastMs) {
    seq = ((pool[r + 6]! & 0x7f) << 24) | (pool[r + 7]! << 16) | (pool[r + 8]! << 8) | pool[r + 9]!;
    lastMs = now;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) lastMs++;
  }
  const ms = lastMs;
  const id =
    HEX[(ms / 0x10000000000) & 0xff]! +
    HEX[(ms / 0x100000000) & 0xff]! +
    HEX[(ms / 0x1000000) & 0xff]! +
    HEX[(ms / 0x10000) & 0xff]! +
    '-' +
    HEX[(ms / 0x100) & 0xff]! +
    HEX[ms & 0xff]! +
    '-' +
    HEX[0x70 | ((seq >>> 28) & 0x0f)]! +
    HEX[(seq >>> 20) & 0xff]! +
    '-' +
    HEX[0x80 | ((seq >>> 14) & 0x3f)]! +
    HEX[(seq >>> 6) & 0xff]! +
    '-' +
    HEX[((seq << 2) & 0xff) | (pool[r + 10]! & 0x03)]! +
    HEX[pool[r + 11]!]! +
    HEX[pool[r + 12]!]! +
    HEX[pool[r + 13]!]! +
    HEX[pool[r + 14]!]! +
    HEX[pool[r + 15]!]!;
  return id as Uuid;
}

/**
 * A text known to be a UUID: made by `newId`, or checked by `isUuid` where input enters (the route layer's path
 * parameters, body and query schemas, the worker's job data). Functions that look a row up by id take a `Uuid`
 * and so never check again; a text that is not one names nothing, and its caller answers so.
 */
export type Uuid = string & { readonly [uuidBrand]: true };
declare const uuidBrand: unique symbol;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): s is Uuid => UUID.test(s);

/**
 * `s` as a Uuid where an id enters from outside the route layer (job data, a saved definition, a stored row's
 * text): `onInvalid()` is thrown for a text that is not one, which therefore names nothing.
 */
export function parseUuid(s: string, onInvalid: () => Error): Uuid {
  if (!isUuid(s)) throw onInvalid();
  return s;
}

/** A text that must be a UUID (a stored row's id, a view's): a TypeError if it is not, which would be a bug. */
export const asUuid = (s: string): Uuid => parseUuid(s, () => new TypeError(`not a UUID: ${JSON.stringify(s)}`));
