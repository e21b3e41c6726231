import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { dirname } from 'node:path';

/**
 * Where the service started from this directory listens, for `npm run proxy` (issue 20 #7):
 * written once the service listens (outside production), removed when it stops. The proxy,
 * started from the same directory without PROXY_UPSTREAM, forwards there — also when the port
 * was set only in the service's own environment (`API_PORT=9000 npm start`).
 */
export const SERVICE_ADDRESS_FILE = './data/.service.json';

export interface ServiceAddress {
  url: string;
  pid: number;
}

/**
 * The URL a client on this machine uses for a server bound to `host`: a wildcard address
 * (`0.0.0.0`, `::`) is reached through the loopback of its family; an IPv6 literal goes in brackets.
 */
export function localUrlFor(host: string, port: number): string {
  const reach = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${isIPv6(reach) ? `[${reach}]` : reach}:${port}`;
}

export function recordServiceAddress(url: string, file = SERVICE_ADDRESS_FILE): void {
  mkdirSync(dirname(file), { recursive: true });
  const record: ServiceAddress & { startedAt: string } = {
    url,
    pid: process.pid,
    startedAt: new Date().toISOString(),
  };
  writeFileSync(file, `${JSON.stringify(record, null, 2)}\n`);
}

/**
 * Removes the record if it is this process's (a later service may have written its own). Best
 * effort: a record left behind names a process that no longer runs, which readers ignore.
 */
export function forgetServiceAddress(file = SERVICE_ADDRESS_FILE): void {
  try {
    if (readRecord(file)?.pid === process.pid) rmSync(file, { force: true });
  } catch {
    // see above
  }
}

/** The recorded address, if its process is still running. */
export function readServiceAddress(file = SERVICE_ADDRESS_FILE): ServiceAddress | undefined {
  const record = readRecord(file);
  return record && isRunning(record.pid) ? record : undefined;
}

function readRecord(file: string): ServiceAddress | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<ServiceAddress>;
    const { url, pid } = parsed;
    if (typeof url !== 'string' || !/^https?:\/\/[^/?#\s]+$/.test(url)) return undefined;
    if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return undefined;
    return { url, pid };
  } catch {
    return undefined; // half-written or edited by hand: as if absent
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
