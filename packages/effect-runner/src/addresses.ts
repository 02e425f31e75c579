/**
 * Which IP addresses are not public: loopback, private, link-local (cloud metadata at 169.254.169.254),
 * carrier-grade NAT, multicast, reserved. IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible,
 * IPv4-translated, NAT64 64:ff9b::/96, 6to4) are judged by that embedded address.
 */
import { BlockList, isIP, isIPv6 } from 'node:net';

const SPECIAL_IPV4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast 255.255.255.255
];

const SPECIAL_IPV6: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo (the client address inside is obfuscated: refuse the whole range)
  ['2001:db8::', 32], // documentation
  ['64:ff9b:1::', 48], // local-use NAT64
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const special = new BlockList();
for (const [net, prefix] of SPECIAL_IPV4) special.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of SPECIAL_IPV6) special.addSubnet(net, prefix, 'ipv6');

/** The address without brackets or an IPv6 zone ('[fe80::1%eth0]' → 'fe80::1'), or null when it is no IP. */
export function normalizeIp(text: string): string | null {
  let ip = text.trim();
  if (ip.startsWith('[') && ip.endsWith(']')) ip = ip.slice(1, -1);
  const zone = ip.indexOf('%');
  if (zone >= 0 && ip.includes(':')) ip = ip.slice(0, zone);
  return isIP(ip) ? ip.toLowerCase() : null;
}

export function ipFamily(ip: string): 4 | 6 {
  return isIPv6(ip) ? 6 : 4;
}

/** The eight 16-bit groups of a valid IPv6 address (a trailing dotted quad counts as two groups). */
function ipv6Groups(ip: string): number[] {
  let text = ip;
  const tail: number[] = [];
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    tail.push((a << 8) | b, (c << 8) | d);
    text = text.slice(0, quad.index);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const fill = rest === undefined ? 0 : 8 - tail.length - left.length - right.length;
  return [...left, ...new Array<number>(Math.max(fill, 0)).fill(0), ...right, ...tail];
}

/** The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4), or null. */
export function embeddedIPv4(ip: string): string | null {
  if (!isIPv6(ip)) return null;
  const g = ipv6Groups(ip);
  const zero = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const at = (i: number) => g[i] ?? 0;
  const low = quad(at(6), at(7));
  if (zero(0, 5) && (at(5) === 0 || at(5) === 0xffff)) return low; // ::a.b.c.d, ::ffff:a.b.c.d
  if (zero(0, 4) && at(4) === 0xffff && at(5) === 0) return low; // ::ffff:0:a.b.c.d
  if (at(0) === 0x64 && at(1) === 0xff9b && zero(2, 6)) return low; // 64:ff9b::a.b.c.d
  if (at(0) === 0x2002) return quad(at(1), at(2)); // 6to4
  return null;
}

/** true when the address is not a public unicast address (or carries one that is not). */
export function isSpecialUse(ip: string): boolean {
  const family = ipFamily(ip);
  if (family === 4) return special.check(ip, 'ipv4');
  if (special.check(ip, 'ipv6')) return true;
  const inner = embeddedIPv4(ip);
  return inner !== null && special.check(inner, 'ipv4');
}
