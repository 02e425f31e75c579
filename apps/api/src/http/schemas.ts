import { CONST_MAX_CHARS, FieldMappingSchema } from '@wds/effect-runner';
import { RUNTIME_NAMES, type RuntimeName } from '@wds/stf-runtime';
import * as v from 'valibot';

/** A JSON Schema object, as the OpenAPI document states it. */
export type JsonSchema = Record<string, unknown>;

/** A stated JSON Schema, or one built from the conversion of other schemas (`convert` is the document's). */
export type StatedJsonSchema = JsonSchema | ((convert: (schema: v.GenericSchema) => JsonSchema) => JsonSchema);

const jsonSchemas = new WeakMap<object, StatedJsonSchema>();

/**
 * States the JSON Schema of a valibot schema or action the converter cannot (or must not) derive itself: a query
 * value read from a string (an integer, a boolean), a `check` with a predicate of its own. The OpenAPI document
 * (openapi.ts) converts strictly and uses this wherever it meets `item` (by identity): for a schema, the whole JSON
 * Schema instead of the converted one; for an action (`v.check`), keywords added to the schema it constrains.
 * Validation is unchanged; `item` itself is returned.
 */
export function withJsonSchema<T extends object>(item: T, json: StatedJsonSchema): T {
  jsonSchemas.set(item, json);
  return item;
}

/** The JSON Schema stated for a schema or action with `withJsonSchema`. */
export const statedJsonSchema = (item: object): StatedJsonSchema | undefined => jsonSchemas.get(item);

/** An integer query parameter (a string of digits in the URL) with a default and bounds. */
export const intQuery = (def: number, min: number, max: number, name: string) =>
  withJsonSchema(
    v.optional(
      v.pipe(
        v.string(),
        v.regex(/^\d+$/, `${name} must be a non-negative integer`),
        v.toNumber(),
        v.minValue(min, `${name} must be at least ${min}`),
        v.maxValue(max, `${name} must be at most ${max}`),
      ),
      String(def),
    ),
    { type: 'integer', minimum: min, maximum: max, default: def },
  );

/**
 * A boolean query parameter: `true` or `false` (and `1`/`0` where `digits`) in the URL, read as that string.
 * Documented as a boolean (a client serialises it as `true`/`false`).
 */
export const boolQuery = (message: string, digits = false) =>
  withJsonSchema(
    v.optional(v.picklist(digits ? (['true', 'false', '1', '0'] as const) : (['true', 'false'] as const), message)),
    { type: 'boolean', ...(digits ? { description: '`true` or `false` (`1` and `0` are read the same)' } : {}) },
  );

/** `limit` (default 100, max 1000) and `offset`, shared by every list. */
export const pageEntries = {
  limit: intQuery(100, 1, 1000, 'limit'),
  offset: intQuery(0, 0, Number.MAX_SAFE_INTEGER, 'offset'),
};
export const PageQuery = v.object(pageEntries);

export const Uuid = v.pipe(v.string(), v.uuid('must be a UUID'));
export const Email = v.pipe(v.string(), v.trim(), v.maxLength(320), v.email('must be an email address'));
const [javascript, ...otherRuntimes] = RUNTIME_NAMES;
/** An STF runtime; `js` is the origin platform's name for `javascript`: accepted wherever a runtime is named. */
export const StfRuntime = v.pipe(
  v.picklist([javascript, 'js', ...otherRuntimes], 'must be javascript (or js), docker or wasm'),
  v.transform((r): RuntimeName => (r === 'js' ? 'javascript' : r)),
);
/** STF code as sent: base64 (decoded and checked by decodeStfCode). */
export const StfCode = v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/\s]*={0,2}\s*$/, 'must be base64'));
export const Role = v.picklist(['admin', 'member'], 'must be admin or member');
export const IsoTimestamp = v.pipe(
  v.string(),
  v.isoTimestamp('must be an ISO 8601 timestamp with time zone'),
  v.transform((s) => new Date(s)),
);

/**
 * JSON Schema for parts of the packages' schemas the converter cannot state (their packages know nothing of the
 * OpenAPI document): the Const of a field mapping is any JSON value whose JSON text is bounded (a `check`).
 */
const mappingConst = FieldMappingSchema.entries.source.options[1].entries.value;
withJsonSchema(mappingConst.pipe[1], { description: `any JSON value of at most ${CONST_MAX_CHARS} characters as JSON text` });
