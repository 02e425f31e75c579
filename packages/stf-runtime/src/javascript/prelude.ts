/**
 * Guest-side JavaScript evaluated in each fresh QuickJS context before the user's code. It is a function
 * expression `(hostLog, hostSql, hostRandom, boot) => api`: it installs the globals of DECISIONS §6 (`$input`,
 * `$sources`, `$caller`, `$env`, `sql`, `console`) and `crypto.getRandomValues` / `crypto.randomUUID` (what
 * libraries such as crypto-js need for keys and salts), and returns helpers the host calls later. It captures JSON, String, … before
 * the user's code runs, so the user cannot change how the host reads results and errors.
 *
 * - hostLog(level, text) → boolean: false once the log cap is reached (then formatting stops).
 * - hostSql(query) → JSON text of the rows or the affected count; throws an Error with the callback's message.
 * - hostRandom(n) → n (≤ 65536) bytes from the host's CSPRNG, as hex text.
 * - boot: JSON text of { input, sources, caller, env }.
 */
export const PRELUDE_FILE = 'stf-prelude.js';

export const PRELUDE_SOURCE = String.raw`(function (hostLog, hostSql, hostRandom, boot) {
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
