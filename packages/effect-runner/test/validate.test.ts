import { describe, expect, it } from 'vitest';
import { validateEffectSpec } from '../src/index.js';

const valid = {
  url: 'https://api.example.com/orders?src=wds',
  method: 'POST',
  header_mappings: [{ source: { type: 'Const', value: 'Bearer x' }, target: 'Authorization' }],
  body_mappings: [{ source: { type: 'Variable', value: '$.customer.email' }, target: 'customer.email' }],
  query_mappings: null,
  timeout_secs: 10,
  retries: 2,
};

describe('validateEffectSpec', () => {
  it('accepts a valid effect (and optional fields left out)', () => {
    expect(validateEffectSpec(valid)).toEqual([]);
    expect(validateEffectSpec({ url: 'http://h/', method: 'delete', header_mappings: [], body_mappings: [] })).toEqual([]);
  });

  it.each([
    [{ url: 'ftp://example.com/' }, 'url: must use http or https, not ftp'],
    [{ url: 'example.com/x' }, "url: 'example.com/x' is not an absolute URL"],
    [{ url: 42 }, 'url: must be an absolute http or https URL'],
    [{ method: 'TRACE' }, 'method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD'],
    [{ timeout_secs: 0 }, 'timeout_secs: must be an integer from 1 to 300'],
    [{ timeout_secs: 301 }, 'timeout_secs: must be an integer from 1 to 300'],
    [{ timeout_secs: 1.5 }, 'timeout_secs: must be an integer from 1 to 300'],
    [{ retries: 6 }, 'retries: must be an integer from 0 to 5'],
    [{ retries: -1 }, 'retries: must be an integer from 0 to 5'],
    [{ header_mappings: undefined }, 'header_mappings: must be an array of field mappings'],
    [{ query_mappings: [{ source: { type: 'X', value: 'a' }, target: 'q' }] }, 'query_mappings[0].source.type: must be Variable or Const'],
    [{ method: 'GET' }, 'body_mappings: a GET request carries no body; remove the mappings'],
  ])('reports %j', (change, problem) => {
    expect(validateEffectSpec({ ...valid, ...change })).toEqual([problem]);
  });

  it.each(['Host', 'content-length', 'Transfer-Encoding', 'CONNECTION', 'Idempotency-Key'])('refuses a mapping onto the reserved header %s', (name) => {
    const problems = validateEffectSpec({ ...valid, header_mappings: [{ source: { type: 'Const', value: 'x' }, target: name }] });
    expect(problems).toEqual([`header_mappings[0].target: ${name} is set by the runner and may not be mapped`]);
  });

  it('checks header names, duplicate headers and constant values', () => {
    const c = (value: string, target: string) => ({ source: { type: 'Const', value }, target });
    expect(validateEffectSpec({ ...valid, header_mappings: [c('1', 'X-A'), c('2', 'x-a'), c('3', 'bad header'), c('a\r\nb', 'X-B')] })).toEqual([
      "header_mappings[1].target: header 'x-a' is already set by header_mappings[0]",
      "header_mappings[2].target: 'bad header' is not a valid header name",
      'header_mappings[3].source.value: contains characters not allowed in a header',
    ]);
  });

  it('checks body targets: empty segments, reserved keys and conflicts', () => {
    const c = (target: string) => ({ source: { type: 'Const', value: 'x' }, target });
    expect(validateEffectSpec({ ...valid, body_mappings: [c('a'), c('a.b'), c('x..y'), c('__proto__.z')] })).toEqual([
      "body_mappings[1].target: 'a.b' nests under body_mappings[0] ('a'), which sets a value",
      "body_mappings[2].target: 'x..y' has an empty segment",
      "body_mappings[3].target: '__proto__.z' uses a reserved key",
    ]);
  });

  it('rejects what is not an object', () => {
    expect(validateEffectSpec(null)).toEqual(['effect: must be an object']);
    expect(validateEffectSpec([])).toEqual(['effect: must be an object']);
  });
});
