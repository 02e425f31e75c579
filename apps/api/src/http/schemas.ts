import * as v from 'valibot';

/** An integer query parameter (a string of digits in the URL) with a default and bounds. */
export const intQuery = (def: number, min: number, max: number, name: string) =>
  v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d+$/, `${name} must be a non-negative integer`),
      v.toNumber(),
      v.minValue(min, `${name} must be at least ${min}`),
      v.maxValue(max, `${name} must be at most ${max}`),
    ),
    String(def),
  );

/** `limit` (default 100, max 1000) and `offset`, shared by every list. */
export const pageEntries = {
  limit: intQuery(100, 1, 1000, 'limit'),
  offset: intQuery(0, 0, Number.MAX_SAFE_INTEGER, 'offset'),
};
export const PageQuery = v.object(pageEntries);

export const Uuid = v.pipe(v.string(), v.uuid('must be a UUID'));
export const Email = v.pipe(v.string(), v.trim(), v.maxLength(320), v.email('must be an email address'));
/** An STF runtime; `js` is the origin platform's name for `javascript`: accepted wherever a runtime is named. */
export const StfRuntime = v.pipe(
  v.picklist(['javascript', 'js', 'docker', 'wasm'], 'must be javascript (or js), docker or wasm'),
  v.transform((r): 'javascript' | 'docker' | 'wasm' => (r === 'js' ? 'javascript' : r)),
);
/** STF code as sent: base64 (decoded and checked by decodeStfCode). */
export const StfCode = v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/\s]*={0,2}\s*$/, 'must be base64'));
export const Role = v.picklist(['admin', 'member'], 'must be admin or member');
export const IsoTimestamp = v.pipe(
  v.string(),
  v.isoTimestamp('must be an ISO 8601 timestamp with time zone'),
  v.transform((s) => new Date(s)),
);
