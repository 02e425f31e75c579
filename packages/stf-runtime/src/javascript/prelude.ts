/**
 * Guest-side JavaScript evaluated in each fresh QuickJS context before the user's code. It is a function
 * expression `(hostLog, hostSql, boot) => api`: it installs the globals of DECISIONS §6 (`$input`, `$sources`,
 * `$caller`, `$env`, `sql`, `console`) and returns helpers the host calls later. It captures JSON, String, … before
 * the user's code runs, so the user cannot change how the host reads results and errors.
 *
 * - hostLog(level, text) → boolean: false once the log cap is reached (then formatting stops).
 * - hostSql(query) → JSON text of the rows or the affected count; throws an Error with the callback's message.
 * - boot: JSON text of { input, sources, caller, env }.
 */
export const PRELUDE_FILE = 'stf-prelude.js';

export const PRELUDE_SOURCE = String.raw`(function (hostLog, hostSql, boot) {
  'use strict';
  const g = globalThis;
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const toStr = String;
  const defineProperty = Object.defineProperty;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;

  const bigintsAsStrings = function (_key, value) { return typeof value === 'bigint' ? toStr(value) : value; };

  // Formats one console argument roughly as Node does: strings as they are, objects as JSON.
  function format(value) {
    switch (typeof value) {
      case 'string': return value;
      case 'undefined': return 'undefined';
      case 'bigint': return toStr(value) + 'n';
      case 'symbol': return value.toString();
      case 'function': return '[Function: ' + (value.name || '(anonymous)') + ']';
      case 'object': {
        if (value === null) return 'null';
        if (value instanceof ErrorCtor) {
          const head = toStr(value.name) + ': ' + toStr(value.message);
          return typeof value.stack === 'string' && value.stack ? head + '\n' + value.stack.replace(/\n$/, '') : head;
        }
        try {
          const json = stringify(value, bigintsAsStrings);
          if (json !== undefined) return json;
        } catch (e) {
          // circular structures and throwing toJSON fall through
        }
        try { return toStr(value); } catch (e) { return '[object]'; }
      }
      default: return toStr(value);
    }
  }

  let logsOpen = true;
  function logger(level) {
    return function () {
      if (!logsOpen) return;
      let text = '';
      for (let i = 0; i < arguments.length; i++) text += (i ? ' ' : '') + format(arguments[i]);
      logsOpen = hostLog(level, text);
    };
  }
  const console = {
    log: logger('log'), info: logger('info'), warn: logger('warn'), error: logger('error'), debug: logger('debug'),
  };
  console.trace = console.debug;

  function sql(query) {
    if (typeof query !== 'string') throw new TypeErrorCtor('sql(query) expects the query as a string');
    return parse(hostSql(query));
  }

  const data = parse(boot);
  const define = function (name, value) {
    defineProperty(g, name, { value: value, writable: true, configurable: true, enumerable: false });
  };
  define('console', console);
  define('sql', sql);
  define('$input', data.input);
  define('$sources', data.sources);
  define('$caller', data.caller);
  define('$env', data.env);
  const ctx = { sources: data.sources, caller: data.caller, env: data.env, sql: sql };

  return {
    // Module form: calls the default export; always returns a promise.
    invoke: function (fn) {
      if (typeof fn !== 'function') {
        throw new TypeErrorCtor('the module must "export default" a function (input, ctx) => output');
      }
      return (async function () { return await fn(data.input, ctx); })();
    },
    // The output as JSON text; undefined becomes null.
    serialize: function (value) {
      const json = stringify(value);
      return json === undefined ? 'null' : json;
    },
    // A thrown value as JSON { name?, message, stack?, fileName?, lineNumber? }; never throws on ordinary values.
    describe: function (e) {
      const out = {};
      try {
        if (e !== null && (typeof e === 'object' || typeof e === 'function')) {
          const keys = ['name', 'message', 'stack', 'fileName', 'lineNumber'];
          for (let i = 0; i < keys.length; i++) {
            try {
              const v = e[keys[i]];
              if (typeof v === 'string' || typeof v === 'number') out[keys[i]] = v;
            } catch (err) {
              // a throwing getter: leave the field out
            }
          }
          if (typeof out.message !== 'string') out.message = format(e);
        } else {
          out.message = format(e);
        }
      } catch (err) {
        out.message = 'a value that cannot be described was thrown';
      }
      return stringify(out);
    },
  };
})`;
