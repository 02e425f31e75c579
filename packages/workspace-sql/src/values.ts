import pg from 'pg';

type Parser = (value: string) => unknown;
const builtin = (oid: number): Parser => pg.types.getTypeParser(oid, 'text') as Parser;
const parseDate = builtin(pg.types.builtins.TIMESTAMPTZ);

/**
 * How values of user tables become JSON: native where lossless, strings otherwise.
 * int8 within ±2^53 → number (else string); numeric → string; timestamptz → ISO 8601 (UTC);
 * timestamp → ISO 8601 without zone; date → YYYY-MM-DD; json/jsonb → parsed; bytea → base64.
 */
const PARSERS: Record<number, Parser> = {
  [pg.types.builtins.INT8]: (v) => {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : v;
  },
  [pg.types.builtins.NUMERIC]: (v) => v,
  [pg.types.builtins.TIMESTAMPTZ]: (v) => {
    const d = parseDate(v) as Date;
    return Number.isNaN(d.getTime()) ? v : d.toISOString();
  },
  [pg.types.builtins.TIMESTAMP]: (v) => (/^\d{4}-\d{2}-\d{2} /.test(v) ? v.replace(' ', 'T') : v),
  [pg.types.builtins.DATE]: (v) => v,
  [pg.types.builtins.BYTEA]: (v) => (v.startsWith('\\x') ? Buffer.from(v.slice(2), 'hex').toString('base64') : v),
};

export const userValueTypes = {
  getTypeParser: (oid: number, format?: string) =>
    PARSERS[oid] ?? (pg.types.getTypeParser as (o: number, f?: string) => Parser)(oid, format ?? 'text'),
};
