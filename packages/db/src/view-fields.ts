import * as v from 'valibot';
import type { Role as RoleName } from './schema.js';

/**
 * The fields the packages' views are made of (imported as `field`): each package that owns a resource states its
 * view once as a valibot schema built from these, exports the type inferred from it, and apps/api re-exports the
 * schema as the answer its routes declare. What the database holds as a Date is answered as ISO text.
 */
export const Uuid = v.pipe(v.string(), v.uuid());
export const Timestamp = v.pipe(v.string(), v.isoTimestamp());
export const Integer = v.pipe(v.number(), v.integer());
export const NonNegative = v.pipe(v.number(), v.integer(), v.minValue(0));
/** A JSON object with any fields. */
export const JsonObject = v.record(v.string(), v.unknown());
/** A workspace role (the tables' `Role`). */
export const Role = v.picklist(['admin', 'member'] as const satisfies readonly RoleName[]);
