import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key under which a client address is counted by the per-address limits (address-limit.guard.ts).
 *
 * `ip` is Fastify's `request.ip`: the peer, or the X-Forwarded-For client when the peer is a proxy
 * that TRUST_PROXY trusts. An IPv4-mapped IPv6 address (`::ffff:10.1.2.3`) counts as its IPv4
 * address. Any other IPv6 address counts by its /64 prefix: one subscriber usually holds a whole
 * /64, so counting single IPv6 addresses would give a flooder 2^64 budgets. A missing address (a
 * socket already gone) counts as `unknown`.
 */
export function clientAddressKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  if (isIPv4(ip)) return ip;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  if (!isIPv6(ip)) return ip;
  return `${ipv6Prefix64(ip)}::/64`;
}

/** The first four groups of an IPv6 address, without leading zeros, in lower case. */
function ipv6Prefix64(ip: string): string {
  const bare = ip.split('%', 1)[0].toLowerCase(); // drop a zone id (fe80::1%eth0)
  const [head, tail] = bare.includes('::') ? bare.split('::', 2) : [bare, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  let groups: string[];
  if (tail === undefined) {
    groups = headGroups;
  } else {
    const tailGroups = tail === '' ? [] : tail.split(':');
    // An embedded IPv4 tail (::ffff:1.2.3.4 handled above; 64:ff9b::1.2.3.4) counts as two groups.
    const tailLength = tailGroups.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
    const missing = Math.max(0, 8 - headGroups.length - tailLength);
    groups = [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups];
  }
  return groups
    .slice(0, 4)
    .map((g) => (g.includes('.') ? g : g.replace(/^0+(?=.)/, '')))
    .join(':');
}
