import { Injectable } from '@nestjs/common';
import { createHash, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { ValidationError } from '../../common/errors/app-error';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import type { KeysetPosition } from '../../records/query/record-query';

/**
 * The cursor of a keyset-paged dataview (D31): opaque to the client and tamper-evident.
 *
 * `<payload>.<mac>`, both base64url: the payload is the JSON `{v, p: [values, id], d, t, h}` —
 * the position after which the next page starts (the last row's sort values and key), the dataview
 * code, the tenant, and a hash of what decides the row set and its order (filters, sort, search,
 * group, configuration version); the MAC is HMAC-SHA256 of the payload under a key derived with
 * HKDF-SHA256 from JWT_SECRET (info `mtb:dataview-cursor:v1`), so the JWT key itself signs nothing
 * but tokens. A cursor that was altered, comes from another tenant or dataview, or was made for
 * other filters, another sort or an older configuration is refused: 400 `cursor: invalid`.
 *
 * The position holds values the client has already seen in the rows (sort keys are visible,
 * unmasked fields), so the payload is signed, not encrypted.
 */

/** What a cursor is bound to. */
export interface CursorScope {
  dataview: string;
  tenantId: string;
  /** queryHash() of the request's row set and order. */
  queryHash: string;
}

const VERSION = 1;
const MAX_CURSOR_LENGTH = 4096;
const B64URL = /^[A-Za-z0-9_-]+$/;
const HKDF_SALT = 'mtb-dataview-cursor';
const HKDF_INFO = 'mtb:dataview-cursor:v1';

/** A stable hash of anything JSON (the query's filters, sort, search, group and config version). */
export function queryHash(parts: unknown): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 32);
}

export function invalidCursor(): ValidationError {
  return new ValidationError('Invalid cursor', [{ field: 'cursor', error: 'invalid' }]);
}

function isScalar(v: unknown): boolean {
  return (
    v === null ||
    typeof v === 'string' ||
    (typeof v === 'number' && Number.isFinite(v)) ||
    typeof v === 'boolean'
  );
}

export class CursorCodec {
  /** Signs with the first; a cursor of any of them is still read (D57: JWT_SECRET_PREVIOUS). */
  private readonly keys: Buffer[];

  constructor(secret: string, previous: readonly string[] = []) {
    if (!secret) throw new Error('The cursor key needs a secret');
    this.keys = [secret, ...previous].map((s) => Buffer.from(hkdfSync('sha256', s, HKDF_SALT, HKDF_INFO, 32)));
  }

  encode(position: KeysetPosition, scope: CursorScope): string {
    const payload = Buffer.from(
      JSON.stringify({
        v: VERSION,
        p: [position.values, position.id],
        d: scope.dataview,
        t: scope.tenantId,
        h: scope.queryHash,
      }),
      'utf8',
    ).toString('base64url');
    return `${payload}.${this.mac(this.keys[0], payload).toString('base64url')}`;
  }

  /** The position of a cursor made by `encode` for this scope; 400 `cursor: invalid` otherwise. */
  decode(cursor: string, scope: CursorScope): KeysetPosition {
    if (cursor.length > MAX_CURSOR_LENGTH) throw invalidCursor();
    const parts = cursor.split('.');
    if (parts.length !== 2 || !B64URL.test(parts[0]) || !B64URL.test(parts[1])) throw invalidCursor();
    const [payload, mac] = parts;
    const given = Buffer.from(mac, 'base64url');
    const signed = this.keys.some((key) => {
      const expected = this.mac(key, payload);
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
    if (!signed) throw invalidCursor();
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalidCursor();
    }
    const b = body as { v?: unknown; p?: unknown; d?: unknown; t?: unknown; h?: unknown } | null;
    if (
      !b ||
      typeof b !== 'object' ||
      b.v !== VERSION ||
      b.d !== scope.dataview ||
      b.t !== scope.tenantId ||
      b.h !== scope.queryHash ||
      !Array.isArray(b.p) ||
      b.p.length !== 2
    )
      throw invalidCursor();
    const [values, id] = b.p as [unknown, unknown];
    if (
      !Array.isArray(values) ||
      !values.every(isScalar) ||
      typeof id !== 'number' ||
      !Number.isSafeInteger(id)
    )
      throw invalidCursor();
    return { values: values as unknown[], id };
  }

  private mac(key: Buffer, payload: string): Buffer {
    return createHmac('sha256', key).update(payload, 'utf8').digest();
  }
}

/** The codec keyed from the service's JWT_SECRET (and JWT_SECRET_PREVIOUS during a rotation). */
@Injectable()
export class DataviewCursors extends CursorCodec {
  constructor(@InjectConfig() config: AppConfig) {
    super(config.auth.jwtSecret, config.auth.jwtSecretsPrevious);
  }
}
