/**
 * The SSRF guard: every outbound call of an effect or Fetch input source asks it for the address to connect
 * to. It resolves the host, refuses when ANY resolved address is not public (a name resolving to both a public
 * and a private address is refused), and lets through what OUTBOUND_ALLOWLIST names: host names (exact,
 * case-insensitive; all their addresses are allowed), IP addresses and CIDR ranges.
 */
import { promises as dns } from 'node:dns';
import { BlockList } from 'node:net';
import { embeddedIPv4, ipFamily, isSpecialUse, normalizeIp } from './addresses.js';
import { EffectError } from './errors.js';

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

export interface OutboundGuardOptions {
  /** Entries as parseAllowlist returns them (they are parsed again: a bad entry throws). */
  allowlist?: string[];
  /** Default: dns.promises.lookup(host, { all: true }). */
  resolver?: Resolver;
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** A host name as compared with the allowlist: lower case, no trailing dot, no IPv6 brackets. */
export function normalizeHost(hostname: string): string {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

function parseEntry(entry: string): string {
  const bad = (why: string) => new Error(`OUTBOUND_ALLOWLIST: '${entry}' ${why}`);
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const ip = normalizeIp(entry.slice(0, slash));
    const prefixText = entry.slice(slash + 1);
    if (ip === null) throw bad('is not a CIDR range (the part before / is not an IP address)');
    const max = ipFamily(ip) === 4 ? 32 : 128;
    const prefix = Number(prefixText);
    if (!/^\d{1,3}$/.test(prefixText) || prefix > max) throw bad(`is not a CIDR range (the prefix length must be 0..${max})`);
    return `${ip}/${prefix}`;
  }
  const ip = normalizeIp(entry);
  if (ip !== null) return ip;
  if (entry.includes('*')) throw bad('uses a wildcard; list each host name');
  const host = normalizeHost(entry);
  if (!HOST_NAME.test(host) || /^\d+$/.test(host.slice(host.lastIndexOf('.') + 1))) {
    throw bad('is not a host name, IP address or CIDR range');
  }
  return host;
}

/** Parses OUTBOUND_ALLOWLIST text ('api.example.com, 127.0.0.1, 10.1.0.0/16, ::1'): throws an Error naming a bad entry. */
export function parseAllowlist(text: string | undefined): string[] {
  if (!text) return [];
  const entries = text
    .split(/[\s,]+/)
    .filter((e) => e !== '')
    .map(parseEntry);
  return [...new Set(entries)];
}

const defaultResolver: Resolver = async (hostname) => {
  const found = await dns.lookup(hostname, { all: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export class OutboundGuard {
  private readonly hosts = new Set<string>();
  private readonly ranges = new BlockList();
  private readonly resolver: Resolver;

  constructor(opts: OutboundGuardOptions = {}) {
    for (const entry of parseAllowlist((opts.allowlist ?? []).join(','))) {
      const slash = entry.indexOf('/');
      if (slash >= 0) {
        const ip = entry.slice(0, slash);
        this.ranges.addSubnet(ip, Number(entry.slice(slash + 1)), ipFamily(ip) === 4 ? 'ipv4' : 'ipv6');
      } else if (normalizeIp(entry) !== null) {
        this.ranges.addAddress(entry, ipFamily(entry) === 4 ? 'ipv4' : 'ipv6');
      } else {
        this.hosts.add(entry);
      }
    }
    this.resolver = opts.resolver ?? defaultResolver;
  }

  /** true when the address may be contacted: public, or allowed by an IP/CIDR entry (or by `hostname` being listed). */
  allowsAddress(ip: string, hostname?: string): boolean {
    const address = normalizeIp(ip);
    if (address === null) return false;
    if (hostname !== undefined && this.hosts.has(normalizeHost(hostname))) return true;
    const inner = embeddedIPv4(address);
    if (this.ranges.check(address, ipFamily(address) === 4 ? 'ipv4' : 'ipv6')) return true;
    if (inner !== null && this.ranges.check(inner, 'ipv4')) return true;
    return !isSpecialUse(address);
  }

  /**
   * Resolves a host (or takes an IP literal) and returns the address to connect to; throws EffectError kind
   * 'refused' when any resolved address is not allowed, 'network' when the name does not resolve.
   */
  async resolve(hostname: string): Promise<{ address: string; family: 4 | 6 }> {
    const host = normalizeHost(hostname);
    if (host === '') throw new EffectError('invalid', 'the URL has no host');
    const literal = normalizeIp(host);
    if (literal !== null) {
      if (!this.allowsAddress(literal)) {
        throw new EffectError('refused', `outbound calls may not reach ${literal}`, `address ${literal} is not public and not in OUTBOUND_ALLOWLIST`);
      }
      return { address: literal, family: ipFamily(literal) };
    }
    let found: Array<{ address: string; family: 4 | 6 }>;
    try {
      found = await this.resolver(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new EffectError('network', `could not resolve ${host}`, code ?? (err instanceof Error ? err.message : String(err)));
    }
    if (found.length === 0) throw new EffectError('network', `could not resolve ${host}`, 'no addresses');
    const addresses = found.map((a) => normalizeIp(a.address) ?? a.address);
    const refused = addresses.filter((a) => !this.allowsAddress(a, host));
    if (refused.length > 0) {
      throw new EffectError(
        'refused',
        `outbound calls may not reach ${host}`,
        `${host} resolves to ${addresses.join(', ')}; not public and not in OUTBOUND_ALLOWLIST: ${refused.join(', ')}`,
      );
    }
    const first = addresses[0]!;
    return { address: first, family: ipFamily(first) };
  }
}
