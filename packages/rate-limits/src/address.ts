import { isIP } from 'node:net';

/**
 * The address the outermost of `trustProxy` trusted proxies saw: the n-th X-Forwarded-For entry from the right
 * (entries further left are written by the client and prove nothing); undefined when not to be believed (no trusted
 * proxies, fewer entries than proxies — a client that reached the port directly — or not an IP), and then the
 * socket's address counts. The port must be reachable only through those proxies: a direct client writes the header.
 */
export function forwardedAddress(forwardedFor: string | undefined, trustProxy: number): string | undefined {
  if (trustProxy <= 0) return undefined;
  const hops = (forwardedFor ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const seen = hops.length >= trustProxy ? hops[hops.length - trustProxy] : undefined;
  return seen !== undefined && isIP(seen.replace(/%.*$/, '')) !== 0 ? addressKey(seen) : undefined;
}

/**
 * What one client is budgeted as: an IPv4 address, or an IPv6 /64 (one host commonly holds a whole /64, so single
 * IPv6 addresses would let it rotate without end). IPv4-mapped IPv6 counts as the IPv4 address.
 */
export function addressKey(address: string): string {
  const a = address.replace(/%.*$/, '').toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) return mapped[1]!;
  if (isIP(a) !== 6) return a;
  const [head = '', tail] = a.split('::');
  const groups = (s: string | undefined) => (s ? s.split(':') : []);
  const width = (g: string[]) => g.reduce((n, x) => n + (x.includes('.') ? 2 : 1), 0);
  const zeros = tail === undefined ? 0 : 8 - width(groups(head)) - width(groups(tail));
  const all = [...groups(head), ...Array<string>(zeros).fill('0'), ...groups(tail)];
  return `${all.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`;
}
