/**
 * Which tenant a request names (D7): the Host `<tenant_code>.<base domain>[:port]`, one label deep.
 * Host names are case-insensitive, so the code comes back lower-cased; anything that is not a
 * single label of letters, digits, `-` or `_` directly under the base domain names no tenant.
 */
const TENANT_LABEL = /^[a-z0-9][a-z0-9_-]{0,99}$/;

export function tenantCodeFromHost(host: string | undefined, baseDomain: string): string | undefined {
  if (!host) return undefined;
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) return undefined; // an IPv6 literal names no tenant
  const colon = name.lastIndexOf(':');
  if (colon >= 0) {
    if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return undefined;
    name = name.slice(0, colon);
  }
  name = name.replace(/\.$/, ''); // fully qualified form: acme.example.com.
  const suffix = `.${baseDomain.toLowerCase().replace(/^\.+|\.+$/g, '')}`;
  if (!name.endsWith(suffix)) return undefined;
  const label = name.slice(0, -suffix.length);
  return TENANT_LABEL.test(label) ? label : undefined;
}
