import { describe, expect, it } from 'vitest';
import {
  buildObject,
  evaluateMappings,
  type FieldMapping,
  inputPathAlias,
  mappingsFromObject,
  parsePath,
  readInputPath,
  readPath,
  validateEffectSpec,
  validateFieldMappings,
} from '../src/index.js';

const doc = {
  a: { b: 1, c: null, f: false, z: 0 },
  items: [{ id: 'first' }, { id: 'second' }],
  'odd key': 'odd',
  list: [10, 20],
};

const v = (value: string, target: string): FieldMapping => ({ source: { type: 'Variable', value }, target });
const c = (value: unknown, target: string): FieldMapping => ({ source: { type: 'Const', value }, target });

describe('readPath', () => {
  it.each([
    ['a.b', 1],
    ['$.a.b', 1],
    ['items[0].id', 'first'],
    ['$.items[1].id', 'second'],
    ['items.1.id', 'second'],
    ["['odd key']", 'odd'],
    ['$["odd key"]', 'odd'],
    ['list[1]', 20],
    ['a.c', null],
    ['a.f', false],
    ['a.z', 0],
  ])('%s → %j', (path, expected) => {
    expect(readPath(doc, path)).toEqual(expected);
  });

  it("'$' and '' are the whole document", () => {
    expect(readPath(doc, '$')).toBe(doc);
    expect(readPath(doc, '')).toBe(doc);
    expect(readPath(undefined, '$')).toBeNull();
  });

  it.each(['missing', 'a.b.c', 'items[5].id', 'items[0].nope', 'list.length', 'a.constructor', '__proto__', 'a.toString', 'items[x]', 'a..b', 'a['])(
    'missing or malformed %s → null',
    (path) => {
      expect(readPath(doc, path)).toBeNull();
    },
  );

  it('reads from arrays and scalars at the root', () => {
    expect(readPath([{ x: 1 }], '$[0].x')).toBe(1);
    expect(readPath('text', '$.x')).toBeNull();
  });

  it('parsePath rejects malformed paths', () => {
    expect(parsePath('a.b[2]')).toEqual(['a', 'b', 2]);
    expect(parsePath('a.')).toBeNull();
    expect(parsePath('a]')).toEqual(['a]']);
    expect(parsePath('a[0]b')).toBeNull();
  });
});

describe('evaluateMappings', () => {
  it('maps variables (with and without $.), constants and missing fields to flat targets', () => {
    const out = evaluateMappings([v('$.a.b', 'x.y'), v('items[0].id', 'first'), c('hello', 'greeting'), v('nope', 'missing')], doc);
    expect(out).toEqual({ 'x.y': 1, first: 'first', greeting: 'hello', missing: null });
  });

  it('a later mapping wins and __proto__ stays a plain key', () => {
    const out = evaluateMappings([c('1', 'k'), c('2', 'k'), c('evil', '__proto__')], {});
    expect(out.k).toBe('2');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['k', '__proto__']);
  });
});

describe('buildObject', () => {
  it('nests dotted targets', () => {
    const out = buildObject(
      [v('a.b', 'customer.id'), v('items[1].id', 'customer.latest'), c('web', 'meta.source.channel'), v('nope', 'customer.missing'), c('x', '$.top')],
      doc,
    );
    expect(out).toEqual({ customer: { id: 1, latest: 'second', missing: null }, meta: { source: { channel: 'web' } }, top: 'x' });
  });

  it('copies whole sub-documents', () => {
    expect(buildObject([v('$.a', 'payload')], doc)).toEqual({ payload: doc.a });
  });

  it('cannot pollute prototypes', () => {
    const out = buildObject([c('1', '__proto__.polluted'), c('2', 'constructor.prototype.polluted')], {});
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

describe('validateFieldMappings', () => {
  it('accepts valid mappings', () => {
    expect(validateFieldMappings([v('$.a', 'x'), c('1', 'y')], 'body_mappings')).toEqual([]);
    expect(validateFieldMappings([], 'header_mappings')).toEqual([]);
  });

  it('reports each problem with its position', () => {
    expect(
      validateFieldMappings(
        [
          v('a', 'x'),
          { source: { type: 'Env', value: 'HOME' }, target: 'y' },
          { source: { type: 'Variable', value: 3 }, target: 'z' },
          { source: { type: 'Variable', value: 'a..b' }, target: 'w' },
          { source: 'a', target: '' },
          'nope',
          v('b', 'x'),
        ],
        'header_mappings',
      ),
    ).toEqual([
      'header_mappings[1].source.type: must be Variable or Const',
      'header_mappings[2].source.value: must be a string',
      "header_mappings[3].source.value: 'a..b' is not a valid path (use a.b, $.a.b or items[0].id)",
      'header_mappings[4].source: must be an object { type, value }',
      'header_mappings[4].target: must be a non-empty string',
      'header_mappings[5]: must be an object { source, target }',
      "header_mappings[6].target: 'x' is already set by header_mappings[0]",
    ]);
  });

  it('a Const may be any JSON value, but not missing', () => {
    expect(validateFieldMappings([c({ mode: 'strict' }, 'a'), c([1], 'b'), c(3, 'd'), c(null, 'e'), c(false, 'f')], 'body_mappings')).toEqual([]);
    expect(validateFieldMappings([{ source: { type: 'Const' }, target: 'x' }], 'body_mappings')).toEqual([
      'body_mappings[0].source.value: is required (any JSON value)',
    ]);
  });

  it('requires an array', () => {
    expect(validateFieldMappings({}, 'query_mappings')).toEqual(['query_mappings: must be an array of field mappings']);
    expect(validateFieldMappings(null, 'q')).toEqual(['q: must be an array of field mappings']);
  });
});

describe('the origin platform\'s mappings', () => {
  it('an object { target: value } is a FieldMapping array: "$." strings are Variables, anything else a Const', () => {
    expect(
      mappingsFromObject({ 'Content-Type': 'application/json', text: '$.message', 'user.email': '$.user.email', limit: 5, opts: { a: 1 }, dollar: '$', cost: '$5' }),
    ).toEqual([
      c('application/json', 'Content-Type'),
      v('$.message', 'text'),
      v('$.user.email', 'user.email'),
      c(5, 'limit'),
      c({ a: 1 }, 'opts'),
      c('$', 'dollar'),
      c('$5', 'cost'),
    ]);
    expect(mappingsFromObject({})).toEqual([]);
  });

  it('JSON Consts keep their type in a body and are JSON text in headers; a non-text header constant is checked as its text', () => {
    expect(buildObject([c({ mode: 'strict' }, 'options'), c([1, 2], 'list'), c(7, 'n')], {})).toEqual({ options: { mode: 'strict' }, list: [1, 2], n: 7 });
    expect(evaluateMappings([c({ a: 1 }, 'X-Json')], {})).toEqual({ 'X-Json': { a: 1 } });
    const spec = { url: 'https://hooks.example.com/x', method: 'POST', body_mappings: [] };
    expect(validateEffectSpec({ ...spec, header_mappings: [c({ a: 'line\nbreak' }, 'X-A'), c(42, 'X-B')] })).toEqual([]);
  });

  describe('"$.input." reads the effect input unless the input has its own "input" field', () => {
    it('suggests a quoted key for a name that is no identifier', () => {
      expect(inputPathAlias({ "it's": 1 }, "$.input[\"it's\"]")).toBe('$["it\'s"]');
    });

    const message = { message: 'sold 3', n: [1, 2] };
    it.each([
      ['$.input.message', message, 'sold 3', '$.message'],
      // Only the origin's `$.` spelling is aliased: a path in this service's dotted form reads as written.
      ['input.message', message, null, null],
      ['$.input.n[1]', message, 2, '$.n[1]'],
      ['$.input', message, message, '$'],
      ['$.message', message, 'sold 3', null],
      ['$.input.message', { input: { message: 'inner' }, message: 'outer' }, 'inner', null],
      ['$.input', { input: 0 }, 0, null],
      ['$.input.x', 'text', null, '$.x'],
      ['$.inputs.x', { inputs: { x: 1 } }, 1, null],
    ])('%s of %j → %j', (path, input, value, alias) => {
      expect(readInputPath(input, path)).toEqual(value);
      expect(inputPathAlias(input, path)).toBe(alias);
    });

    it('applies to headers, query and body alike, and readPath itself knows no such rule', () => {
      expect(buildObject([v('$.input.message', 'text'), v('$.message', 'same')], { message: 'hi' })).toEqual({ text: 'hi', same: 'hi' });
      expect(evaluateMappings([v('$.input.message', 'X-Text')], { message: 'hi' })).toEqual({ 'X-Text': 'hi' });
      expect(readPath({ message: 'hi' }, '$.input.message')).toBeNull();
    });
  });
});
