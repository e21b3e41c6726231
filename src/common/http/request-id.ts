import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a sane client `x-request-id` and generates one otherwise (D19). */
export function requestIdFor(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  const value = Array.isArray(given) ? given[0] : given;
  return value && SANE_REQUEST_ID.test(value) ? value : randomUUID();
}
