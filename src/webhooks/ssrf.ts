import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';

/**
 * D54's SSRF rules for webhook URLs. Outside development, an address that is loopback, link-local,
 * private (RFC 1918, unique-local IPv6), unspecified, CGNAT or multicast is refused unless its host
 * is listed in WEBHOOK_ALLOWED_HOSTS. The check runs on the address actually connected to (a custom
 * DNS lookup), so a name that resolves differently at delivery time (DNS rebinding) is caught.
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
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

export interface SsrfPolicy {
  refusePrivate: boolean;
  allowedHosts: readonly string[];
}

/** Whether an address is loopback, link-local, private or otherwise not a public one. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return BLOCKED.check(mapped[1], 'ipv4');
    return BLOCKED.check(address, 'ipv6');
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

/**
 * A `lookup` for http.request that refuses the addresses the policy refuses, so the address
 * checked is the one connected to. (An IP literal never reaches a lookup: urlProblem checks it.)
 */
export function guardedLookup(policy: SsrfPolicy, host: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
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
