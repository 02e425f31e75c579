import { RUNTIME_NAMES } from '@wds/stf-runtime';
import * as v from 'valibot';
export { Role, Uuid } from '../schemas.js';

/** The pieces the views are made of. */
export const Timestamp = v.pipe(v.string(), v.isoTimestamp());
export const Integer = v.pipe(v.number(), v.integer());
export const NonNegative = v.pipe(v.number(), v.integer(), v.minValue(0));
/** A JSON object with any fields. */
export const JsonObject = v.record(v.string(), v.unknown());
export const RuntimeName = v.picklist(RUNTIME_NAMES);
export const StatementKind = v.picklist(['select', 'insert', 'update', 'delete', 'ddl']);
