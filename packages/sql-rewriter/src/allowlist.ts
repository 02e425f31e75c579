/**
 * What user SQL may call. An allow-list, not a deny-list: anything new in PostgreSQL stays refused until
 * someone decides it is safe (no file, network, catalog, session or large-object access; no unbounded memory).
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  // aggregates
  'count', 'sum', 'avg', 'min', 'max', 'array_agg', 'string_agg', 'json_agg', 'jsonb_agg', 'json_object_agg',
  'jsonb_object_agg', 'bool_and', 'bool_or', 'every', 'stddev', 'stddev_pop', 'stddev_samp', 'variance',
  'var_pop', 'var_samp', 'percentile_cont', 'percentile_disc', 'mode', 'corr', 'covar_pop', 'covar_samp',
  'regr_slope', 'regr_intercept', 'bit_and', 'bit_or',
  // window
  'row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile', 'lag', 'lead', 'first_value',
  'last_value', 'nth_value',
  // strings
  'lower', 'upper', 'length', 'char_length', 'character_length', 'octet_length', 'substring', 'substr', 'trim',
  'btrim', 'ltrim', 'rtrim', 'replace', 'concat', 'concat_ws', 'left', 'right', 'position', 'strpos',
  'split_part', 'regexp_replace', 'regexp_match', 'regexp_matches', 'regexp_split_to_array', 'regexp_like',
  'regexp_count', 'initcap', 'reverse', 'format', 'md5', 'to_char', 'starts_with', 'translate', 'ascii', 'chr',
  'quote_literal', 'quote_ident', 'overlay', 'normalize', 'encode', 'decode', 'sha256', 'sha512', 'to_hex',
  'string_to_array', 'unaccent',
  // numbers
  'abs', 'ceil', 'ceiling', 'floor', 'round', 'trunc', 'mod', 'power', 'pow', 'sqrt', 'cbrt', 'exp', 'ln',
  'log', 'log10', 'greatest', 'least', 'random', 'sign', 'div', 'pi', 'degrees', 'radians', 'sin', 'cos', 'tan',
  'asin', 'acos', 'atan', 'atan2', 'width_bucket', 'to_number', 'gcd', 'lcm', 'scale',
  // dates and times
  'now', 'date_trunc', 'date_part', 'extract', 'age', 'make_date', 'make_time', 'make_timestamp',
  'make_timestamptz', 'make_interval', 'to_timestamp', 'to_date', 'clock_timestamp', 'statement_timestamp',
  'transaction_timestamp', 'timezone', 'date_bin', 'isfinite', 'justify_days', 'justify_hours',
  'justify_interval',
  // json
  'to_json', 'to_jsonb', 'row_to_json', 'array_to_json', 'json_build_object', 'jsonb_build_object',
  'json_build_array', 'jsonb_build_array', 'json_object', 'jsonb_object', 'jsonb_set', 'jsonb_set_lax',
  'jsonb_insert', 'json_extract_path', 'jsonb_extract_path', 'json_extract_path_text', 'jsonb_extract_path_text',
  'json_array_elements', 'jsonb_array_elements', 'json_array_elements_text', 'jsonb_array_elements_text',
  'json_each', 'jsonb_each', 'json_each_text', 'jsonb_each_text', 'json_object_keys', 'jsonb_object_keys',
  'json_array_length', 'jsonb_array_length', 'json_typeof', 'jsonb_typeof', 'json_strip_nulls',
  'jsonb_strip_nulls', 'jsonb_pretty', 'jsonb_path_query', 'jsonb_path_query_array', 'jsonb_path_query_first',
  'jsonb_path_exists', 'jsonb_path_match', 'json_populate_record', 'jsonb_populate_record',
  'json_to_record', 'jsonb_to_record', 'json_to_recordset', 'jsonb_to_recordset',
  // arrays and sets
  'array_length', 'array_lower', 'array_upper', 'array_ndims', 'array_dims', 'unnest', 'array_to_string',
  'array_append', 'array_prepend', 'array_cat', 'array_position', 'array_positions', 'array_remove',
  'array_replace', 'cardinality', 'generate_series', 'generate_subscripts',
  // misc
  'coalesce', 'nullif', 'uuidv7', 'gen_random_uuid', 'num_nulls', 'num_nonnulls',
  // full-text search
  'to_tsvector', 'to_tsquery', 'plainto_tsquery', 'phraseto_tsquery', 'websearch_to_tsquery', 'ts_rank',
  'ts_rank_cd', 'ts_headline', 'setweight',
]);

/** Type names (after any `pg_catalog.`) that must never be used: object-identifier casts expose the catalog. */
export const isForbiddenType = (name: string): boolean =>
  name.startsWith('reg') || name === 'oid' || name === 'xid' || name === 'cid' || name === 'tid' || name.startsWith('ws_') || name.startsWith('pg_');

/** SQL value functions that are plain clock values; the others (CURRENT_USER, …) reveal session internals. */
export const ALLOWED_VALUE_FUNCTIONS: ReadonlySet<string> = new Set([
  'SVFOP_CURRENT_DATE',
  'SVFOP_CURRENT_TIME',
  'SVFOP_CURRENT_TIME_N',
  'SVFOP_CURRENT_TIMESTAMP',
  'SVFOP_CURRENT_TIMESTAMP_N',
  'SVFOP_LOCALTIME',
  'SVFOP_LOCALTIME_N',
  'SVFOP_LOCALTIMESTAMP',
  'SVFOP_LOCALTIMESTAMP_N',
]);

/** ALTER TABLE actions a workspace may take on its own tables. */
export const ALLOWED_ALTER_TABLE: ReadonlySet<string> = new Set([
  'AT_AddColumn',
  'AT_DropColumn',
  'AT_AlterColumnType',
  'AT_ColumnDefault',
  'AT_SetNotNull',
  'AT_DropNotNull',
  'AT_AddConstraint',
  'AT_DropConstraint',
  'AT_ValidateConstraint',
]);
