/**
 * Guard unit tests. Every name is resolved by a stub; the public address 93.184.216.34 is only judged, never
 * contacted (no request is made in this file).
 */
import { describe, expect, it } from 'vitest';
import { EffectError, embeddedIPv4, OutboundGuard, parseAllowlist } from '../src/index.js';
import { stubResolver } from './servers.js';

const PUBLIC = '93.184.216.34';

const table: Record<string, string[]> = {
  'ten.test': ['10.0.0.1'],
  'one-seventy-two.test': ['172.16.0.1'],
  'home.test': ['192.168.1.1'],
  'metadata.test': ['169.254.169.254'],
  'loopback6.test': ['::1'],
  'mapped.test': ['::ffff:10.0.0.1'],
  'nat64.test': ['64:ff9b::a00:1'],
  'aws-metadata6.test': ['fd00:ec2::254'],
  'public.test': [PUBLIC],
  'mixed.test': [PUBLIC, '10.0.0.1'],
  'mixed-reversed.test': ['192.168.1.1', PUBLIC],
  'empty.test': [],
  'garbage.test': ['not-an-ip'],
};

async function refusal(promise: Promise<unknown>): Promise<EffectError> {
  const err = await promise.then(
    () => {
      throw new Error('expected a refusal');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EffectError);
  return err as EffectError;
}

describe('parseAllowlist', () => {
  it('parses host names, IPs and CIDR ranges', () => {
    expect(parseAllowlist('api.example.com, 127.0.0.1, 10.1.0.0/16, ::1')).toEqual(['api.example.com', '127.0.0.1', '10.1.0.0/16', '::1']);
    expect(parseAllowlist(' API.Example.COM.  [fd00::1]\n fd00::/8,,')).toEqual(['api.example.com', 'fd00::1', 'fd00::/8']);
    expect(parseAllowlist(undefined)).toEqual([]);
    expect(parseAllowlist('  ')).toEqual([]);
  });

  it.each([
    ['10.0.0.0/33', '10.0.0.0/33'],
    ['::/129', '::/129'],
    ['10.0.0.0/x', '10.0.0.0/x'],
    ['999.1.1.1/8', '999.1.1.1/8'],
    ['*.example.com', '*.example.com'],
    ['http://api.example.com', 'http://api.example.com'],
    ['10.0.0', '10.0.0'],
    ['bad_host!', 'bad_host!'],
  ])('throws naming the bad entry %s', (text, entry) => {
    expect(() => parseAllowlist(`ok.example.com, ${text}`)).toThrow(`'${entry}'`);
  });

  it('the guard constructor rejects bad entries too', () => {
    expect(() => new OutboundGuard({ allowlist: ['10.0.0.0/40'] })).toThrow(/OUTBOUND_ALLOWLIST/);
  });
});

describe('OutboundGuard.allowsAddress', () => {
  const guard = new OutboundGuard({ resolver: stubResolver({}) });

  it.each([
    '0.0.0.0',
    '0.1.2.3',
    '10.0.0.1',
    '100.64.0.1',
    '127.0.0.1',
    '127.0.0.2',
    '169.254.169.254',
    '172.16.0.1',
    '172.31.255.255',
    '192.0.0.1',
    '192.168.1.1',
    '198.18.0.1',
    '224.0.0.1',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::ffff:10.0.0.1',
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '::10.0.0.1',
    '::ffff:0:10.0.0.1',
    '64:ff9b::a00:1',
    '64:ff9b::169.254.169.254',
    '2002:a00:1::1',
    'not-an-ip',
    '',
  ])('refuses %s', (ip) => {
    expect(guard.allowsAddress(ip)).toBe(false);
  });

  it.each([PUBLIC, '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:93.184.216.34', '64:ff9b::5db8:d822'])('allows the public address %s', (ip) => {
    expect(guard.allowsAddress(ip)).toBe(true);
  });

  it('allows listed IPs and CIDR ranges, also in IPv6 forms that embed them', () => {
    const listed = new OutboundGuard({ allowlist: ['127.0.0.1', '10.1.0.0/16', 'fd00::/8'], resolver: stubResolver({}) });
    expect(listed.allowsAddress('127.0.0.1')).toBe(true);
    expect(listed.allowsAddress('::ffff:127.0.0.1')).toBe(true);
    expect(listed.allowsAddress('127.0.0.2')).toBe(false);
    expect(listed.allowsAddress('10.1.200.3')).toBe(true);
    expect(listed.allowsAddress('10.2.0.1')).toBe(false);
    expect(listed.allowsAddress('fd12::1')).toBe(true);
    expect(listed.allowsAddress('fe80::1')).toBe(false);
  });

  it('allows any address of a listed host name (case-insensitive, exact)', () => {
    const listed = new OutboundGuard({ allowlist: ['Internal.Example.com'], resolver: stubResolver({}) });
    expect(listed.allowsAddress('10.0.0.1', 'internal.example.com')).toBe(true);
    expect(listed.allowsAddress('10.0.0.1', 'INTERNAL.example.com.')).toBe(true);
    expect(listed.allowsAddress('10.0.0.1', 'api.internal.example.com')).toBe(false);
    expect(listed.allowsAddress('10.0.0.1')).toBe(false);
  });

  it('finds the IPv4 address embedded in IPv6 forms', () => {
    expect(embeddedIPv4('::ffff:10.0.0.1')).toBe('10.0.0.1');
    expect(embeddedIPv4('::ffff:a00:1')).toBe('10.0.0.1');
    expect(embeddedIPv4('64:ff9b::a00:1')).toBe('10.0.0.1');
    expect(embeddedIPv4('::1')).toBe('0.0.0.1');
    expect(embeddedIPv4('2002:a9fe:a9fe::')).toBe('169.254.169.254');
    expect(embeddedIPv4('2606:4700::1')).toBeNull();
    expect(embeddedIPv4('10.0.0.1')).toBeNull();
  });
});

describe('OutboundGuard.resolve', () => {
  const guard = new OutboundGuard({ resolver: stubResolver(table) });

  it.each(['ten.test', 'one-seventy-two.test', 'home.test', 'metadata.test', 'loopback6.test', 'mapped.test', 'nat64.test', 'aws-metadata6.test'])(
    'refuses %s (a private address)',
    async (name) => {
      const err = await refusal(guard.resolve(name));
      expect(err.kind).toBe('refused');
      expect(err.details).toContain(table[name]![0]);
    },
  );

  it('refuses a name resolving to both public and private addresses, in either order', async () => {
    expect((await refusal(guard.resolve('mixed.test'))).kind).toBe('refused');
    expect((await refusal(guard.resolve('mixed-reversed.test'))).kind).toBe('refused');
  });

  it('returns the address of a public name (judged only)', async () => {
    await expect(guard.resolve('public.test')).resolves.toEqual({ address: PUBLIC, family: 4 });
    await expect(guard.resolve('PUBLIC.test.')).resolves.toEqual({ address: PUBLIC, family: 4 });
  });

  it('judges IP literals without resolving them', async () => {
    const calls: string[] = [];
    const counting = new OutboundGuard({ resolver: stubResolver(table, calls) });
    expect((await refusal(counting.resolve('169.254.169.254'))).kind).toBe('refused');
    expect((await refusal(counting.resolve('[::1]'))).kind).toBe('refused');
    expect((await refusal(counting.resolve('::ffff:7f00:1'))).kind).toBe('refused');
    await expect(counting.resolve(PUBLIC)).resolves.toEqual({ address: PUBLIC, family: 4 });
    expect(calls).toEqual([]);
  });

  it('reports names that do not resolve as network errors', async () => {
    expect((await refusal(guard.resolve('unknown.test'))).kind).toBe('network');
    expect((await refusal(guard.resolve('empty.test'))).kind).toBe('network');
    expect((await refusal(guard.resolve('garbage.test'))).kind).toBe('refused');
  });

  it('lets the allowlist through: by host name, by IP and by CIDR', async () => {
    const allowing = new OutboundGuard({ allowlist: ['ten.test', '192.168.1.1', '172.16.0.0/12'], resolver: stubResolver(table) });
    await expect(allowing.resolve('TEN.test')).resolves.toEqual({ address: '10.0.0.1', family: 4 });
    await expect(allowing.resolve('home.test')).resolves.toEqual({ address: '192.168.1.1', family: 4 });
    await expect(allowing.resolve('one-seventy-two.test')).resolves.toEqual({ address: '172.16.0.1', family: 4 });
    expect((await refusal(allowing.resolve('metadata.test'))).kind).toBe('refused');
    expect((await refusal(allowing.resolve('mixed.test'))).kind).toBe('refused');
  });

  it('uses DNS by default (localhost resolves to loopback and is refused)', async () => {
    const err = await refusal(new OutboundGuard().resolve('localhost'));
    expect(['refused', 'network']).toContain(err.kind);
  });
});
