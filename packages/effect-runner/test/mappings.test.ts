import { describe, expect, it } from 'vitest';
import { buildObject, evaluateMappings, type FieldMapping, parsePath, readPath, validateFieldMappings } from '../src/index.js';

const doc = {
  a: { b: 1, c: null, f: false, z: 0 },
  items: [{ id: 'first' }, { id: 'second' }],
  'odd key': 'odd',
  list: [10, 20],
};

const v = (value: string, target: string): FieldMapping => ({ source: { type: 'Variable', value }, target });
const c = (value: string, target: string): FieldMapping => ({ source: { type: 'Const', value }, target });

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
          { source: { type: 'Const', value: 3 }, target: 'z' },
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

  it('requires an array', () => {
    expect(validateFieldMappings({}, 'query_mappings')).toEqual(['query_mappings: must be an array of field mappings']);
    expect(validateFieldMappings(null, 'q')).toEqual(['q: must be an array of field mappings']);
  });
});
