/**
 * Guest-side JavaScript evaluated in each fresh QuickJS context before the user's code. It is a function
 * expression `(hostLog, hostSql, hostRandom, hostDeflate, hostBase64, boot, logRoom, maxOutputChars) => api`: it
 * installs the globals of docs/stfs.md#the-javascript-runtime (`$input`, `$sources`, `$caller`, `$env`, `sql`,
 * `console`), `crypto.getRandomValues` / `crypto.randomUUID` (what libraries such as crypto-js need for keys and
 * salts), and `atob`, `btoa`, `TextEncoder`, `TextDecoder` (UTF-8 only, no streaming), and returns helpers the host
 * calls later.
 *
 * For the bundled libraries it also installs two native helpers (NATIVE_DEFLATE, NATIVE_BASE64 below), under
 * `Symbol.for` keys of the global object: non-enumerable, non-writable, non-configurable. Not names: code that lists
 * the globals (`Object.keys`, `for…in`, `Object.getOwnPropertyNames`) sees nothing new, and no name an STF might use
 * is taken. A global rather than a module: the bundles are also handed out as they are (workflows' `Library`
 * sources) and run elsewhere, so they look the helper up and fall back to their JavaScript when it is absent
 * (scripts/build-libraries.mjs). Non-writable and non-configurable, so assigning or deleting them fails (QuickJS
 * does let Object.defineProperty give a property of the global object a new value even then — `undefined` too —,
 * so an STF set on it can replace them, for its own run and its own libraries only). They are plain functions of
 * bytes, bounded by the run's memory limit (engine.ts): an STF calling them itself gains nothing it could not do
 * more slowly. It captures JSON, String, … before the user's code runs, so the user cannot change how the host reads
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
 * - hostDeflate(arrayBuffer, byteLength, level) → a new ArrayBuffer: the bytes zlib-compressed (RFC 1950, Node's
 *   zlib, `level` 0–9, else 6); throws when they or the result do not fit the run's memory.
 * - hostBase64(arrayBuffer, byteLength) → the bytes as base64 text; the same bounds.
 * - boot: JSON text of { input, sources, caller, env }.
 * - logRoom: the characters the first log line may have.
 * - maxOutputChars: an output whose JSON is longer is not handed over (serialize returns its length instead).
 */
export const PRELUDE_FILE = 'stf-prelude.js';

/** The longest query text sql() accepts: the SQL layer's own cap (1 MiB of UTF-8; a longer text has more bytes). */
export const MAX_QUERY_CHARS = 1024 * 1024;
/** How much of a thrown error's message and stack the host reads. */
export const MAX_ERROR_CHARS = 16 * 1024;

/**
 * `globalThis[Symbol.for(NATIVE_DEFLATE)](data, level?)`: `data` (a Uint8Array, another view, or an ArrayBuffer)
 * zlib-compressed by the host, as a new Uint8Array — what pako.deflate / fflate.zlibSync make, in native time.
 */
export const NATIVE_DEFLATE = 'wds.stf.deflate';
/** `globalThis[Symbol.for(NATIVE_BASE64)](data)`: `data` (as for NATIVE_DEFLATE) as base64 text, made by the host. */
export const NATIVE_BASE64 = 'wds.stf.base64';

export const PRELUDE_SOURCE = String.raw`(function (hostLog, hostSql, hostRandom, hostDeflate, hostBase64, boot, logRoom, maxOutputChars) {
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

  // atob / btoa (binary strings and base64) and TextEncoder / TextDecoder (UTF-8), as browsers and Node have them:
  // code written for the origin platform uses them (pdf-lib embedding an image given as base64, for one).
  const fromCharCode = String.fromCharCode;
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const B64_VALUE = {};
  for (let i = 0; i < 64; i++) B64_VALUE[B64[i]] = i;
  function invalidCharacter(message) {
    const e = new ErrorCtor(message);
    e.name = 'InvalidCharacterError';
    return e;
  }
  // Joins character codes into a string a slice at a time (one call with millions of arguments would overflow).
  function codesToString(codes) {
    let out = '';
    for (let i = 0; i < codes.length; i += 8192) out += fromCharCode.apply(null, codes.slice(i, i + 8192));
    return out;
  }
  function btoa(input) {
    const s = toStr(input);
    const n = s.length;
    for (let i = 0; i < n; i++) if (s.charCodeAt(i) > 255) throw invalidCharacter('btoa: the string has characters outside Latin1');
    const parts = [];
    for (let i = 0; i < n; i += 3) {
      const t = (s.charCodeAt(i) << 16) | ((i + 1 < n ? s.charCodeAt(i + 1) : 0) << 8) | (i + 2 < n ? s.charCodeAt(i + 2) : 0);
      parts.push(B64[(t >> 18) & 63] + B64[(t >> 12) & 63] + (i + 1 < n ? B64[(t >> 6) & 63] : '=') + (i + 2 < n ? B64[t & 63] : '='));
    }
    return parts.join('');
  }
  // WHATWG forgiving-base64 decode: ASCII whitespace ignored, padding optional.
  function atob(input) {
    let s = toStr(input).replace(/[\t\n\f\r ]/g, '');
    if (s.length % 4 === 0) s = s.replace(/==?$/, '');
    if (s.length % 4 === 1 || /[^A-Za-z0-9+\/]/.test(s)) throw invalidCharacter('atob: the string is not correctly encoded');
    const codes = [];
    let buffer = 0;
    let bits = 0;
    for (let i = 0; i < s.length; i++) {
      buffer = ((buffer << 6) | B64_VALUE[s[i]]) & 0xffffff;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        codes.push((buffer >> bits) & 255);
      }
    }
    return codesToString(codes);
  }
  // The code point at s[i] (a lone surrogate is U+FFFD, as a USVString has it) and how many code units it took.
  function codePointAt(s, i) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) return [0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00), 2];
    }
    return [c >= 0xd800 && c <= 0xdfff ? 0xfffd : c, 1];
  }
  function utf8Length(c) {
    return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  function putUtf8(c, out, at) {
    if (c < 0x80) out[at] = c;
    else if (c < 0x800) { out[at] = 0xc0 | (c >> 6); out[at + 1] = 0x80 | (c & 63); }
    else if (c < 0x10000) { out[at] = 0xe0 | (c >> 12); out[at + 1] = 0x80 | ((c >> 6) & 63); out[at + 2] = 0x80 | (c & 63); }
    else { out[at] = 0xf0 | (c >> 18); out[at + 1] = 0x80 | ((c >> 12) & 63); out[at + 2] = 0x80 | ((c >> 6) & 63); out[at + 3] = 0x80 | (c & 63); }
  }
  class TextEncoder {
    get encoding() { return 'utf-8'; }
    encode(input) {
      const s = input === undefined ? '' : toStr(input);
      let length = 0;
      for (let i = 0; i < s.length;) { const [c, units] = codePointAt(s, i); length += utf8Length(c); i += units; }
      const out = new Uint8ArrayCtor(length);
      let at = 0;
      for (let i = 0; i < s.length;) { const [c, units] = codePointAt(s, i); putUtf8(c, out, at); at += utf8Length(c); i += units; }
      return out;
    }
    encodeInto(source, destination) {
      if (!(destination instanceof Uint8ArrayCtor)) throw new TypeErrorCtor('TextEncoder.encodeInto: the destination must be a Uint8Array');
      const s = toStr(source);
      let read = 0;
      let written = 0;
      for (let i = 0; i < s.length;) {
        const [c, units] = codePointAt(s, i);
        const n = utf8Length(c);
        if (written + n > destination.length) break;
        putUtf8(c, destination, written);
        written += n;
        read += units;
        i += units;
      }
      return { read: read, written: written };
    }
  }
  const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];
  class TextDecoder {
    constructor(label, options) {
      const name = label === undefined ? 'utf-8' : toStr(label).trim().toLowerCase();
      if (UTF8_LABELS.indexOf(name) < 0) throw new RangeError('TextDecoder: only UTF-8 is supported here (got "' + name + '")');
      this.fatal = !!(options && options.fatal);
      this.ignoreBOM = !!(options && options.ignoreBOM);
    }
    get encoding() { return 'utf-8'; }
    // The WHATWG UTF-8 decoder: a bad sequence is U+FFFD (or a TypeError when fatal). No streaming.
    decode(input, options) {
      if (options && options.stream) throw new TypeErrorCtor('TextDecoder.decode: streaming is not supported here');
      let bytes;
      if (input === undefined) bytes = new Uint8ArrayCtor(0);
      else if (input instanceof ArrayBuffer) bytes = new Uint8ArrayCtor(input);
      else if (ArrayBuffer.isView(input)) bytes = new Uint8ArrayCtor(input.buffer, input.byteOffset, input.byteLength);
      else throw new TypeErrorCtor('TextDecoder.decode expects an ArrayBuffer or a view of one');
      const fatal = this.fatal;
      const codes = [];
      const bad = function () {
        if (fatal) throw new TypeErrorCtor('TextDecoder: the data is not valid UTF-8');
        codes.push(0xfffd);
      };
      let needed = 0;
      let seen = 0;
      let cp = 0;
      let lower = 0x80;
      let upper = 0xbf;
      let i = !this.ignoreBOM && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      for (; i < bytes.length; i++) {
        const b = bytes[i];
        if (needed === 0) {
          if (b <= 0x7f) codes.push(b);
          else if (b >= 0xc2 && b <= 0xdf) { needed = 1; cp = b & 0x1f; }
          else if (b >= 0xe0 && b <= 0xef) { if (b === 0xe0) lower = 0xa0; if (b === 0xed) upper = 0x9f; needed = 2; cp = b & 0xf; }
          else if (b >= 0xf0 && b <= 0xf4) { if (b === 0xf0) lower = 0x90; if (b === 0xf4) upper = 0x8f; needed = 3; cp = b & 7; }
          else bad();
          continue;
        }
        if (b < lower || b > upper) {
          needed = seen = cp = 0;
          lower = 0x80;
          upper = 0xbf;
          bad();
          i--;
          continue;
        }
        lower = 0x80;
        upper = 0xbf;
        cp = (cp << 6) | (b & 0x3f);
        if (++seen === needed) {
          if (cp >= 0x10000) codes.push(0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
          else codes.push(cp);
          needed = seen = cp = 0;
        }
      }
      if (needed !== 0) bad();
      return codesToString(codes);
    }
  }

  // The native helpers of the bundled libraries (see the top of prelude.ts). The host is handed a whole ArrayBuffer
  // and its length: a view of part of one (or of a SharedArrayBuffer) is copied first — a memcpy in QuickJS, counted
  // as the guest's — so the host never copies more than was asked for. The getters are the intrinsic ones, taken
  // now: they check what they are given, so an STF cannot make the host read a length the buffer does not have.
  const reflectApply = Reflect.apply;
  const getter = function (proto, key) { return Object.getOwnPropertyDescriptor(proto, key).get; };
  const TypedArrayProto = Object.getPrototypeOf(Uint8ArrayCtor.prototype);
  const TYPED = [getter(TypedArrayProto, 'buffer'), getter(TypedArrayProto, 'byteOffset'), getter(TypedArrayProto, 'byteLength')];
  const DATA_VIEW = [getter(DataView.prototype, 'buffer'), getter(DataView.prototype, 'byteOffset'), getter(DataView.prototype, 'byteLength')];
  const bufferLength = getter(ArrayBuffer.prototype, 'byteLength');
  const typedSet = TypedArrayProto.set;
  function viewParts(getters, data) {
    try {
      return [reflectApply(getters[0], data, []), reflectApply(getters[1], data, []), reflectApply(getters[2], data, [])];
    } catch (e) {
      return undefined;
    }
  }
  function wholeBuffer(what, data) {
    const parts = viewParts(TYPED, data) || viewParts(DATA_VIEW, data) || [data, 0, -1];
    const buffer = parts[0];
    const offset = parts[1];
    let length = parts[2];
    let whole = -1;
    try { whole = reflectApply(bufferLength, buffer, []); } catch (e) { /* not an ArrayBuffer */ }
    if (length < 0) {
      if (whole < 0) throw new TypeErrorCtor(what + ' expects a Uint8Array (or another ArrayBuffer view) or an ArrayBuffer');
      length = whole;
    }
    if (offset === 0 && length === whole) return [buffer, length];
    const copy = new Uint8ArrayCtor(length);
    reflectApply(typedSet, copy, [new Uint8ArrayCtor(buffer, offset, length)]);
    return [reflectApply(TYPED[0], copy, []), length];
  }
  function nativeDeflate(data, level) {
    const b = wholeBuffer('deflate', data);
    return new Uint8ArrayCtor(hostDeflate(b[0], b[1], typeof level === 'number' ? level : -1));
  }
  function nativeBase64(data) {
    const b = wholeBuffer('base64', data);
    return hostBase64(b[0], b[1]);
  }
  defineProperty(g, Symbol.for('${NATIVE_DEFLATE}'), { value: nativeDeflate, writable: false, configurable: false, enumerable: false });
  defineProperty(g, Symbol.for('${NATIVE_BASE64}'), { value: nativeBase64, writable: false, configurable: false, enumerable: false });

  const data = parse(boot);
  const define = function (name, value) {
    defineProperty(g, name, { value: value, writable: true, configurable: true, enumerable: false });
  };
  define('console', console);
  define('sql', sql);
  define('crypto', { getRandomValues: getRandomValues, randomUUID: randomUUID });
  define('atob', atob);
  define('btoa', btoa);
  define('TextEncoder', TextEncoder);
  define('TextDecoder', TextDecoder);
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
