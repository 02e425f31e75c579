/**
 * The FieldMapping schema (docs/effects.md#fieldmapping) of request bodies — a workflow step's `input_mappings` and an
 * effect's header, body and query mappings are the same thing: `{ source: { type: Variable, value: path } | { type:
 * Const, value: any JSON value }, target }`.
 */
import * as v from 'valibot';

/** A Const is any JSON value, passed on as it is; its JSON text may be this long. */
export const CONST_MAX_CHARS = 100_000;

export const FieldMappingSchema = v.strictObject({
  source: v.variant(
    'type',
    [
      v.strictObject({ type: v.literal('Variable'), value: v.pipe(v.string('must be a string'), v.maxLength(10_000)) }),
      v.strictObject({
        type: v.literal('Const'),
        value: v.pipe(
          v.unknown(),
          v.check((x) => x !== undefined && (JSON.stringify(x)?.length ?? 0) <= CONST_MAX_CHARS, `must be a JSON value of at most ${CONST_MAX_CHARS} characters`),
        ),
      }),
    ],
    'must be Variable or Const',
  ),
  target: v.pipe(v.string('must be a string'), v.maxLength(255)),
});

/** A FieldMapping as stored and answered (the bounds above were checked when it was saved). */
export const FieldMappingView = v.object({
  source: v.variant('type', [
    v.object({ type: v.literal('Variable'), value: v.string() }),
    v.object({ type: v.literal('Const'), value: v.unknown() }),
  ]),
  target: v.string(),
});
