import { ValidationError } from '../../common/errors/app-error';
import { CursorCodec, CursorScope, queryHash } from './cursor';

const SECRET = 'cursor-spec-jwt-secret-0123456789abcdef';
const scope: CursorScope = {
  dataview: 'orders_grid',
  tenantId: '1',
  queryHash: queryHash(['status', 'desc']),
};
const position = { values: ['2025-08-24', 12.5, null, true], id: 118 };

function refused(run: () => unknown): void {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).details).toEqual([{ field: 'cursor', error: 'invalid' }]);
    return;
  }
  throw new Error('the cursor was accepted');
}

describe('dataview cursor codec (D31)', () => {
  const codec = new CursorCodec(SECRET);

  it('should round-trip a position for the same scope', () => {
    const cursor = codec.encode(position, scope);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
    expect(codec.decode(cursor, scope)).toEqual(position);
    expect(codec.encode(position, scope)).toBe(cursor);
  });

  it('should refuse the cursor in another scope: dataview, tenant, query', () => {
    const cursor = codec.encode(position, scope);
    refused(() => codec.decode(cursor, { ...scope, dataview: 'customers_grid' }));
    refused(() => codec.decode(cursor, { ...scope, tenantId: '2' }));
    refused(() => codec.decode(cursor, { ...scope, queryHash: queryHash(['status', 'asc']) }));
  });

  it('should refuse a cursor signed with another key (the key is derived from JWT_SECRET)', () => {
    refused(() => new CursorCodec(`${SECRET}x`).decode(codec.encode(position, scope), scope));
  });

  it('should read a cursor of the previous secret during a rotation (D57), and sign with the new one', () => {
    const rotated = new CursorCodec(`${SECRET}x`, [SECRET]);
    expect(rotated.decode(codec.encode(position, scope), scope)).toEqual(position);
    refused(() => codec.decode(rotated.encode(position, scope), scope));
  });

  it('should refuse a changed payload or signature, and anything malformed', () => {
    const cursor = codec.encode(position, scope);
    const [payload, mac] = cursor.split('.');
    const body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const forged = Buffer.from(JSON.stringify({ ...body, p: [body.p[0], 1] })).toString('base64url');
    for (const bad of [
      `${forged}.${mac}`,
      `${payload}.${mac.slice(1)}`,
      `${payload}.${Buffer.alloc(32).toString('base64url')}`,
      payload,
      `${payload}.${mac}.x`,
      `${payload}!.${mac}`,
      '',
      'x'.repeat(5000),
    ])
      refused(() => codec.decode(bad, scope));
  });

  it('should refuse a signed payload whose position is not [scalars, integer id]', () => {
    const sign = (p: unknown) => {
      const payload = Buffer.from(
        JSON.stringify({ v: 1, p, d: scope.dataview, t: scope.tenantId, h: scope.queryHash }),
      ).toString('base64url');
      // The codec's own MAC, through encode's format: re-sign by encoding and swapping the payload.
      const inner = codec as unknown as { keys: Buffer[]; mac(k: Buffer, x: string): Buffer };
      const mac = inner.mac(inner.keys[0], payload).toString('base64url');
      return `${payload}.${mac}`;
    };
    expect(codec.decode(sign([['a'], 3]), scope)).toEqual({ values: ['a'], id: 3 });
    for (const p of [[[{ a: 1 }], 3], [['a'], 3.5], [['a'], '3'], [['a']], 'x'])
      refused(() => codec.decode(sign(p), scope));
  });

  it('should hash queries stably', () => {
    expect(queryHash([{ a: 1 }, 'x'])).toBe(queryHash([{ a: 1 }, 'x']));
    expect(queryHash([{ a: 1 }, 'x'])).not.toBe(queryHash([{ a: 2 }, 'x']));
  });
});
