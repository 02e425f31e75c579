/**
 * Guest-side JavaScript evaluated in each fresh QuickJS context before the user's code. It is a function
 * expression `(hostLog, hostSql, hostRandom, boot, logRoom, maxOutputChars) => api`: it installs the globals of
 * DECISIONS §6 (`$input`, `$sources`, `$caller`, `$env`, `sql`, `console`) and `crypto.getRandomValues` /
 * `crypto.randomUUID` (what libraries such as crypto-js need for keys and salts), and returns helpers the host calls
 * later. It captures JSON, String, … before the user's code runs, so the user cannot change how the host reads
 * results and errors.
 *
 * Nothing large crosses into the host (every crossing is a copy into the worker's own heap): a log line is cut to
 * the room the host has left for logs, an output longer than the output limit is reported by its length only, a
 * query is at most MAX_QUERY_CHARS, and an error's message and stack are clipped.
 *
 * - hostLog(level, text, cut) → the characters the next line may have (0 once the log cap is reached; then
 *   formatting stops). `cut`: the line was longer than the room it was given.
 * - hostSql(query) → JSON text of the rows or the affected count; throws an Error with the callback's message.
 * - hostRandom(n) → n (≤ 65536) bytes from the host's CSPRNG, as hex text.
 * - boot: JSON text of { input, sources, caller, env }.
 * - logRoom: the characters the first log line may have.
 * - maxOutputChars: an output whose JSON is longer is not handed over (serialize returns its length instead).
 */
export const PRELUDE_FILE = 'stf-prelude.js';

/** The longest query text sql() accepts: the SQL layer's own cap (1 MiB of UTF-8; a longer text has more bytes). */
export const MAX_QUERY_CHARS = 1024 * 1024;
/** How much of a thrown error's message and stack the host reads. */
export const MAX_ERROR_CHARS = 16 * 1024;

export const PRELUDE_SOURCE = String.raw`(function (hostLog, hostSql, hostRandom, boot, logRoom, maxOutputChars) {
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

  function logger(level) {
    return function () {
      if (!(logRoom > 0)) return;
      let text = '';
      for (let i = 0; i < arguments.length && text.length <= logRoom; i++) text += (i ? ' ' : '') + format(arguments[i]);
      const cut = text.length > logRoom;
      logRoom = hostLog(level, cut ? text.slice(0, logRoom) : text, cut);
    };
  }
  const console = {
    log: logger('log'), info: logger('info'), warn: logger('warn'), error: logger('error'), debug: logger('debug'),
  };
  console.trace = console.debug;

  function sql(query) {
    if (typeof query !== 'string') throw new TypeErrorCtor('sql(query) expects the query as a string');
    if (query.length > ${MAX_QUERY_CHARS}) throw new ErrorCtor('sql(query): the query is longer than 1 MiB');
    return parse(hostSql(query));
  }

  // Web Crypto's random part, backed by the host's CSPRNG.
  const Uint8ArrayCtor = Uint8Array;
  const integerArrays = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, BigInt64Array, BigUint64Array];
  function getRandomValues(array) {
    let ok = false;
    for (let i = 0; i < integerArrays.length; i++) if (array instanceof integerArrays[i]) ok = true;
    if (!ok) throw new TypeErrorCtor('crypto.getRandomValues expects an integer typed array');
    if (array.byteLength > 65536) throw new ErrorCtor('crypto.getRandomValues: at most 65536 bytes at a time');
    const hex = hostRandom(array.byteLength);
    const bytes = new Uint8ArrayCtor(array.buffer, array.byteOffset, array.byteLength);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.substr(i * 2, 2), 16);
    return array;
  }
  function randomUUID() {
    const b = getRandomValues(new Uint8ArrayCtor(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = '';
    for (let i = 0; i < 16; i++) h += (b[i] < 16 ? '0' : '') + b[i].toString(16);
    return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
  }

  const data = parse(boot);
  const define = function (name, value) {
    defineProperty(g, name, { value: value, writable: true, configurable: true, enumerable: false });
  };
  define('console', console);
  define('sql', sql);
  define('crypto', { getRandomValues: getRandomValues, randomUUID: randomUUID });
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
    // The output as JSON text (undefined becomes null), or the length of a JSON text too long to hand over.
    serialize: function (value) {
      const json = stringify(value);
      if (json === undefined) return 'null';
      return json.length > maxOutputChars ? json.length : json;
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
              if (typeof v === 'string') out[keys[i]] = v.length > ${MAX_ERROR_CHARS} ? v.slice(0, ${MAX_ERROR_CHARS}) + '…' : v;
              else if (typeof v === 'number') out[keys[i]] = v;
            } catch (err) {
              // a throwing getter: leave the field out
            }
          }
          if (typeof out.message !== 'string') out.message = format(e);
        } else {
          out.message = format(e);
        }
        if (out.message.length > ${MAX_ERROR_CHARS}) out.message = out.message.slice(0, ${MAX_ERROR_CHARS}) + '…';
      } catch (err) {
        out.message = 'a value that cannot be described was thrown';
      }
      return stringify(out);
    },
  };
})`;
