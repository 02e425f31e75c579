import { type Kysely, sql } from 'kysely';

/**
 * Bounds on what one statement of user SQL can make PostgreSQL allocate (issue 28, finding 4). The rewriter
 * (sql-rewriter/src/bounds.ts) sends the calls that can build far more than their input here, checked at run time
 * (a template's constants are parameters, so no check on a constant's value could be static):
 *
 * - `user_data.replace` and `user_data.regexp_replace` (every overload of PostgreSQL 15) compute an upper bound of
 *   their result before building it and refuse one over 16 MiB (a value larger than SQL_MAX_ROW_BYTES's default
 *   could not be returned anyway). Same names as the built-ins, so result columns keep their names.
 * - `user_data.wds_format_spec(fmt, n)` wraps format()'s format string (n: the arguments after it): widths given by
 *   an argument (`%*s`, `%1$*2$s`) are refused, the widths written in it may add up to 16 MiB, and it may have at
 *   most 4n + 16 conversions (`%1$s` repeated would copy one argument without end).
 * - `user_data.wds_collect(v)` wraps the arguments of the aggregates that keep every input (array_agg, string_agg,
 *   json(b)_agg, json(b)_object_agg) and the value of `ARRAY(subquery)`; constant arguments are charged along
 *   (`wds_collect(v, octet_length(delimiter))`), or by `user_data.wds_charge(bytes)` in the aggregate's FILTER. One statement may collect 64 MiB in all. Values of 256 bytes or more
 *   are charged exactly; smaller ones one in 64 at 64 times their size (a charge is a GUC round trip, ~2.5 µs;
 *   sampling keeps a million small values close to their unwrapped speed, and a bomb of them is still charged its
 *   due within a few percent). The tally lives in two transaction-local settings keyed by statement_timestamp():
 *   user SQL cannot call set_config or current_setting.
 * - `user_data.wds_cap(row)` is a condition of a recursive CTE's recursive term on each row it reads of the CTE
 *   (`r.*`): a row over 1 MiB goes no further (`s || s` doubles otherwise, one iteration at a time, up to 1 GB; and
 *   building jsonb from a row takes many times its size). Recursive rows carry paths and counters, not documents.
 * - `user_data.wds_subscript(i)` wraps the subscripts of assignment targets (`SET j['100000000'] = …` pads a jsonb
 *   array with that many nulls): at most 1 000 000 from 0.
 *
 * All raise SQLSTATE WDS02, which the service answers with 400 EXECUTION_ERROR and the message. Sorts, hashes and
 * temporary files are bounded per workspace role (work_mem, hash_mem_multiplier, temp_file_limit; roles.ts).
 * Functions are SECURITY INVOKER and qualify what they call; sessions resolve names in pg_catalog only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION user_data.wds_too_large(what text, bytes numeric) RETURNS void
      LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
    BEGIN
      RAISE EXCEPTION '% would build a value of % bytes; one value may have at most 16777216 bytes', what, bytes
        USING ERRCODE = 'WDS02', HINT = 'build smaller values, or build them outside SQL';
    END
    $fn$;

    -- $2: how many arguments follow the format string (NULL: VARIADIC, unknown). A conversion may name an argument
    -- by position, so a format string of many '%1$s' would copy one argument that many times.
    CREATE OR REPLACE FUNCTION user_data.wds_format_spec(text, integer) RETURNS text
      LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
    DECLARE
      rest text;
      widths numeric;
      conversions bigint;
    BEGIN
      IF pg_catalog.strpos($1, '%') = 0 THEN
        RETURN $1;
      END IF;
      rest := pg_catalog.replace($1, '%%', '');
      conversions := pg_catalog.octet_length(rest) - pg_catalog.octet_length(pg_catalog.replace(rest, '%', ''));
      IF conversions > COALESCE(4 * $2 + 16, 1024) THEN
        RAISE EXCEPTION 'format() with % conversions for % arguments would copy its arguments that many times', conversions, COALESCE($2::text, 'a VARIADIC array of')
          USING ERRCODE = 'WDS02', HINT = 'a format string may have at most 16 conversions more than four per argument';
      END IF;
      IF rest OPERATOR(pg_catalog.~) '%([0-9]+\\$)?-*\\*' THEN
        RAISE EXCEPTION 'format() widths given by an argument (%%*s, %%1$*2$s) are not allowed'
          USING ERRCODE = 'WDS02', HINT = 'write the width into the format string';
      END IF;
      SELECT pg_catalog.sum(m[1]::numeric) INTO widths
        FROM pg_catalog.regexp_matches(rest, '%(?:[0-9]+\\$)?-*([0-9]+)(?![0-9$])', 'g') AS m;
      IF widths > 16777216 THEN
        PERFORM user_data.wds_too_large('format() with these widths', widths);
      END IF;
      RETURN $1;
    END
    $fn$;

    CREATE OR REPLACE FUNCTION user_data.replace(text, text, text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    DECLARE
      grow bigint := pg_catalog.octet_length($3) - pg_catalog.octet_length($2);
      bytes numeric;
    BEGIN
      IF grow > 0 AND $2 <> '' THEN
        -- At most one match per pattern length; when that bound is too high, count the matches.
        bytes := pg_catalog.octet_length($1) + pg_catalog.div(pg_catalog.octet_length($1), pg_catalog.octet_length($2)) * grow;
        IF bytes > 16777216 THEN
          bytes := pg_catalog.octet_length($1)
            + pg_catalog.div(pg_catalog.octet_length($1) - pg_catalog.octet_length(pg_catalog.replace($1, $2, '')), pg_catalog.octet_length($2)) * grow;
          IF bytes > 16777216 THEN
            PERFORM user_data.wds_too_large('replace()', bytes);
          END IF;
        END IF;
      END IF;
      RETURN pg_catalog.replace($1, $2, $3);
    END
    $fn$;

    -- The result of regexp_replace is at most the source, plus the replacement for each match, plus the source
    -- again for each back-reference in the replacement (matches do not overlap). "every": all matches are replaced.
    CREATE OR REPLACE FUNCTION user_data.wds_regexp_replace_bound(s text, pattern text, replacement text, flags text, every boolean)
      RETURNS void LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $fn$
    DECLARE
      refs bigint := pg_catalog.octet_length(replacement) - pg_catalog.octet_length(pg_catalog.replace(replacement, E'\\\\', ''));
      matches numeric := CASE WHEN every THEN pg_catalog.char_length(s) + 1 ELSE 1 END;
      bytes numeric;
    BEGIN
      bytes := pg_catalog.octet_length(s) * (1 + refs) + matches * pg_catalog.octet_length(replacement);
      IF bytes > 16777216 AND every THEN
        matches := pg_catalog.regexp_count(s, pattern, 1, pg_catalog.replace(COALESCE(flags, ''), 'g', ''));
        bytes := pg_catalog.octet_length(s) * (1 + refs) + matches * pg_catalog.octet_length(replacement);
      END IF;
      IF bytes > 16777216 THEN
        PERFORM user_data.wds_too_large('regexp_replace()', bytes);
      END IF;
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.regexp_replace(text, text, text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_regexp_replace_bound($1, $2, $3, '', false);
      RETURN pg_catalog.regexp_replace($1, $2, $3);
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.regexp_replace(text, text, text, text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_regexp_replace_bound($1, $2, $3, $4, pg_catalog.strpos($4, 'g') > 0);
      RETURN pg_catalog.regexp_replace($1, $2, $3, $4);
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.regexp_replace(text, text, text, integer) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_regexp_replace_bound($1, $2, $3, '', false);
      RETURN pg_catalog.regexp_replace($1, $2, $3, $4);
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.regexp_replace(text, text, text, integer, integer) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_regexp_replace_bound($1, $2, $3, '', $5 = 0);
      RETURN pg_catalog.regexp_replace($1, $2, $3, $4, $5);
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.regexp_replace(text, text, text, integer, integer, text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_regexp_replace_bound($1, $2, $3, $6, $5 = 0 OR pg_catalog.strpos($6, 'g') > 0);
      RETURN pg_catalog.regexp_replace($1, $2, $3, $4, $5, $6);
    END
    $fn$;

    CREATE OR REPLACE FUNCTION user_data.wds_charge(bytes bigint) RETURNS boolean
      LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
    DECLARE
      charge bigint := COALESCE(bytes, 0) + 16;
      at text;
      used bigint := 0;
    BEGIN
      IF charge < 256 THEN
        IF pg_catalog.random() >= 0.015625 THEN
          RETURN true;
        END IF;
        charge := charge * 64;
      END IF;
      at := pg_catalog.statement_timestamp()::text;
      IF pg_catalog.current_setting('wds.collect_at', true) OPERATOR(pg_catalog.=) at THEN
        used := pg_catalog.current_setting('wds.collected')::bigint;
      ELSE
        PERFORM pg_catalog.set_config('wds.collect_at', at, true);
      END IF;
      used := used + charge;
      IF used > 67108864 THEN
        RAISE EXCEPTION 'the aggregates and ARRAY(subquery) values of this statement would collect more than 67108864 bytes'
          USING ERRCODE = 'WDS02', HINT = 'aggregate fewer rows or smaller values, or page through the rows';
      END IF;
      PERFORM pg_catalog.set_config('wds.collected', used::text, true);
      RETURN true;
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.wds_collect(anyelement) RETURNS anyelement
      LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
    BEGIN
      -- The cheap case first: a small value passes unless sampled (see wds_charge).
      IF pg_catalog.pg_column_size($1) >= 240 OR pg_catalog.random() < 0.015625 THEN
        PERFORM user_data.wds_charge(CASE WHEN pg_catalog.pg_column_size($1) >= 240 THEN pg_catalog.pg_column_size($1) ELSE (COALESCE(pg_catalog.pg_column_size($1), 0) + 16) * 64 END);
      END IF;
      RETURN $1;
    END
    $fn$;

    -- The same, with the constant arguments of its aggregate (a delimiter, a key) charged along: one call a row.
    CREATE OR REPLACE FUNCTION user_data.wds_collect(anyelement, bigint) RETURNS anyelement
      LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
    DECLARE
      size bigint := COALESCE(pg_catalog.pg_column_size($1), 0) + COALESCE($2, 0);
    BEGIN
      IF size >= 240 OR pg_catalog.random() < 0.015625 THEN
        PERFORM user_data.wds_charge(CASE WHEN size >= 240 THEN size ELSE (size + 16) * 64 END);
      END IF;
      RETURN $1;
    END
    $fn$;

    -- A row of \`ARRAY(SELECT * …)\`, whose column has no expression to wrap (a condition of the subquery around it).
    CREATE OR REPLACE FUNCTION user_data.wds_collect_row(anyelement) RETURNS boolean
      LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE AS $fn$
    BEGIN
      PERFORM user_data.wds_collect($1);
      RETURN true;
    END
    $fn$;

    CREATE OR REPLACE FUNCTION user_data.wds_cap(anyelement) RETURNS boolean
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      IF pg_catalog.pg_column_size($1) > 1048576 THEN
        RAISE EXCEPTION 'a row of a recursive query holds % bytes; a row may carry at most 1048576 bytes to the next iteration', pg_catalog.pg_column_size($1)
          USING ERRCODE = 'WDS02', HINT = 'stop the recursion earlier, or build smaller values';
      END IF;
      RETURN true;
    END
    $fn$;

    -- Subscripts of assignment targets (UPDATE … SET j['1000000000'] = …, INSERT INTO t (a[…])): assigning past the
    -- end of a jsonb array fills the gap with nulls, tens of bytes each in memory.
    CREATE OR REPLACE FUNCTION user_data.wds_subscript(bigint) RETURNS bigint
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      IF $1 > 1000000 OR $1 < -1000000 THEN
        RAISE EXCEPTION 'an assigned subscript of % is out of bounds; subscripts assigned to may be at most 1000000 from 0', $1
          USING ERRCODE = 'WDS02', HINT = 'one value may have at most 16777216 bytes';
      END IF;
      RETURN $1;
    END
    $fn$;
    CREATE OR REPLACE FUNCTION user_data.wds_subscript(integer) RETURNS integer
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$ SELECT user_data.wds_subscript($1::bigint)::integer $fn$;
    CREATE OR REPLACE FUNCTION user_data.wds_subscript(text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
    BEGIN
      -- A text subscript of a jsonb array is read as an integer.
      IF $1 OPERATOR(pg_catalog.~) '^\s*[+-]?[0-9]+\s*$' THEN
        PERFORM user_data.wds_subscript(pg_catalog.btrim($1)::numeric::bigint);
      END IF;
      RETURN $1;
    EXCEPTION WHEN numeric_value_out_of_range THEN
      RAISE EXCEPTION 'an assigned subscript of % is out of bounds; subscripts assigned to may be at most 1000000 from 0', $1 USING ERRCODE = 'WDS02';
    END
    $fn$;

    GRANT EXECUTE ON FUNCTION
      user_data.wds_too_large(text, numeric),
      user_data.wds_format_spec(text, integer),
      user_data.replace(text, text, text),
      user_data.wds_regexp_replace_bound(text, text, text, text, boolean),
      user_data.regexp_replace(text, text, text),
      user_data.regexp_replace(text, text, text, text),
      user_data.regexp_replace(text, text, text, integer),
      user_data.regexp_replace(text, text, text, integer, integer),
      user_data.regexp_replace(text, text, text, integer, integer, text),
      user_data.wds_charge(bigint),
      user_data.wds_collect(anyelement),
      user_data.wds_collect(anyelement, bigint),
      user_data.wds_collect_row(anyelement),
      user_data.wds_cap(anyelement),
      user_data.wds_subscript(bigint),
      user_data.wds_subscript(integer),
      user_data.wds_subscript(text)
    TO PUBLIC;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP FUNCTION user_data.wds_subscript(text);
    DROP FUNCTION user_data.wds_subscript(integer);
    DROP FUNCTION user_data.wds_subscript(bigint);
    DROP FUNCTION user_data.wds_cap(anyelement);
    DROP FUNCTION user_data.wds_collect_row(anyelement);
    DROP FUNCTION user_data.wds_collect(anyelement, bigint);
    DROP FUNCTION user_data.wds_collect(anyelement);
    DROP FUNCTION user_data.wds_charge(bigint);
    DROP FUNCTION user_data.regexp_replace(text, text, text, integer, integer, text);
    DROP FUNCTION user_data.regexp_replace(text, text, text, integer, integer);
    DROP FUNCTION user_data.regexp_replace(text, text, text, integer);
    DROP FUNCTION user_data.regexp_replace(text, text, text, text);
    DROP FUNCTION user_data.regexp_replace(text, text, text);
    DROP FUNCTION user_data.wds_regexp_replace_bound(text, text, text, text, boolean);
    DROP FUNCTION user_data.replace(text, text, text);
    DROP FUNCTION user_data.wds_format_spec(text, integer);
    DROP FUNCTION user_data.wds_too_large(text, numeric);
  `.execute(db);
}
