import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';

/**
 * D54's SSRF rules for webhook URLs. Unless NODE_ENV is explicitly `development`, an address that is
 * loopback, link-local, private (RFC 1918, unique-local IPv6), unspecified, CGNAT or multicast is
 * refused unless its host is listed in WEBHOOK_ALLOWED_HOSTS — an IPv6 address that carries an IPv4
 * one (mapped, compatible, NAT64, 6to4, Teredo) as the IPv4 it reaches. The check runs on the
 * address actually connected to (a custom DNS lookup), so a name that resolves differently at
 * delivery time (DNS rebinding) is caught.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  // Local-use NAT64 (RFC 8215): a translator of the deployment's own network.
  ['64:ff9b:1::', 48],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

/**
 * The IPv6 prefixes whose addresses reach an IPv4 one, and where its 32 bits sit (the index of its
 * first 16-bit group). NAT64 and 6to4 are public routes in general (DNS64 gives every IPv4-only host
 * a 64:ff9b:: address), so they are refused by the IPv4 they lead to, not as a whole.
 */
const EMBEDDING: readonly { net: string; prefix: number; at: number; inverted?: boolean }[] = [
  { net: '::', prefix: 96, at: 6 }, // IPv4-compatible (deprecated): ::127.0.0.1
  { net: '::ffff:0:0', prefix: 96, at: 6 }, // IPv4-mapped: ::ffff:7f00:1
  { net: '64:ff9b::', prefix: 96, at: 6 }, // NAT64 well-known prefix (RFC 6052)
  { net: '2002::', prefix: 16, at: 1 }, // 6to4 (RFC 3056)
  { net: '2001::', prefix: 32, at: 6, inverted: true }, // Teredo client (RFC 4380), bits inverted
];
const EMBEDDING_LISTS = EMBEDDING.map((e) => {
  const list = new BlockList();
  list.addSubnet(e.net, e.prefix, 'ipv6');
  return { ...e, list };
});

/** The eight 16-bit groups of an IPv6 address (the URL parser validates and canonicalizes it). */
function ipv6Groups(address: string): number[] {
  const canonical = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1);
  const [head, tail] = canonical.split('::');
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return tail === undefined
    ? left
    : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/** The IPv4 address an IPv6 one carries, by the embedding forms above, or undefined. */
export function embeddedIpv4(address: string): string | undefined {
  const form = EMBEDDING_LISTS.find((e) => e.list.check(address, 'ipv6'));
  if (!form) return undefined;
  const groups = ipv6Groups(address);
  const bits = ((groups[form.at] << 16) | groups[form.at + 1]) >>> 0;
  const v4 = form.inverted ? ~bits >>> 0 : bits;
  return [24, 16, 8, 0].map((shift) => (v4 >>> shift) & 255).join('.');
}

export interface SsrfPolicy {
  refusePrivate: boolean;
  allowedHosts: readonly string[];
}

/** Whether an address is loopback, link-local, private or otherwise not a public one. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    if (BLOCKED.check(address, 'ipv6')) return true;
    const v4 = embeddedIpv4(address);
    return v4 !== undefined && BLOCKED.check(v4, 'ipv4');
  }
  return true;
}

const bare = (host: string) => host.toLowerCase().replace(/^\[|\]$/g, '');

/** Why an address of `host` may not be reached, or undefined. */
export function refusalOf(policy: SsrfPolicy, host: string, address: string): string | undefined {
  if (!policy.refusePrivate) return undefined;
  const h = bare(host);
  if (policy.allowedHosts.includes(h) || policy.allowedHosts.includes(bare(address))) return undefined;
  return isPrivateAddress(address)
    ? `${h} resolves to ${address}, a loopback, link-local or private address (allow it with WEBHOOK_ALLOWED_HOSTS)`
    : undefined;
}

/** The problem of a webhook URL as configured (scheme, form, a literal private address), or undefined. */
export function urlProblem(policy: SsrfPolicy, raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  const host = bare(url.hostname);
  if (isIP(host) !== 0) return refusalOf(policy, host, host);
  if (
    policy.refusePrivate &&
    (host === 'localhost' || host.endsWith('.localhost')) &&
    !policy.allowedHosts.includes(host)
  )
    return `${host} is a loopback name (allow it with WEBHOOK_ALLOWED_HOSTS)`;
  return undefined;
}

export class SsrfRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SsrfRefusedError';
  }
}

/** dns.lookup with `all: true` (a test gives its own: a name's addresses are not a test's to set). */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for http.request that refuses the addresses the policy refuses, so the address
 * checked is the one connected to. (An IP literal never reaches a lookup: urlProblem checks it.)
 */
export function guardedLookup(
  policy: SsrfPolicy,
  host: string,
  resolve: Resolver = dnsLookup,
): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const list = Array.isArray(addresses) ? addresses : [];
      for (const a of list) {
        const refused = refusalOf(policy, host, a.address);
        if (refused) return callback(new SsrfRefusedError(refused), '', 0);
      }
      if (list.length === 0) return callback(new Error(`${hostname} has no address`), '', 0);
      if ((options as { all?: boolean }).all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      return callback(null, list[0].address, list[0].family);
    });
  };
}
