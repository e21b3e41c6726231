import { decodeTierMessage, LocalTier, versionOf } from './local-tier';

describe('LocalTier (issue 13 #3)', () => {
  const tier = (maxBytes = 1024 * 1024, ttlMs = 60_000) => new LocalTier({ prefix: 'p', maxBytes, ttlMs });

  it('should hold the configuration, profile, tenant and token families only', () => {
    const t = tier();
    for (const key of [
      'p:tenant:1',
      'p:registry:1:customers',
      'p:prf:1:customers',
      'p:profile:CUST',
      'p:user:1:2',
      'p:revoked:j',
      'p:dataview:1:4',
      'p:config:customers:1',
    ])
      expect({ key, held: t.holds(key) }).toEqual({ key, held: true });
    for (const key of [
      'p:list:1:customers:h',
      'p:otp:1:x',
      'p:events:cache',
      'q:tenant:1',
      'p:tenantx:1',
      'p',
    ])
      expect({ key, held: t.holds(key) }).toEqual({ key, held: false });
  });

  it('should version content deterministically: the same value has the same version on every instance', () => {
    expect(versionOf('{"a":1}')).toBe(versionOf('{"a":1}'));
    expect(versionOf('{"a":1}')).not.toBe(versionOf('{"a":2}'));
    const a = tier();
    const b = tier();
    expect(a.set('p:tenant:1', '{"a":1}')).toBe(b.set('p:tenant:1', '{"a":1}'));
  });

  it('should drop an entry when another instance publishes a different version, and keep it for the same one', () => {
    const t = tier();
    const v = t.set('p:tenant:1', '{"a":1}');
    t.apply({ o: 'other', op: 'set', key: 'p:tenant:1', v });
    expect(t.get('p:tenant:1')).toBe('{"a":1}');
    t.apply({ o: 'other', op: 'set', key: 'p:tenant:1', v: versionOf('{"a":2}') });
    expect(t.get('p:tenant:1')).toBeUndefined();
  });

  it('should drop deleted keys and keys matching a deleted pattern', () => {
    const t = tier();
    t.set('p:prf:1:customers', '1');
    t.set('p:prf:2:customers', '2');
    t.set('p:prf:1:orders', '3');
    t.apply({ o: 'x', op: 'delp', pattern: 'p:prf:*:customers' });
    expect([t.get('p:prf:1:customers'), t.get('p:prf:2:customers'), t.get('p:prf:1:orders')]).toEqual([
      undefined,
      undefined,
      '3',
    ]);
    t.apply({ o: 'x', op: 'del', keys: ['p:prf:1:orders'] });
    expect(t.size).toBe(0);
  });

  it('should stay within its size bound, dropping the least recently used', () => {
    const t = tier(64 * 1024);
    const value = 'x'.repeat(1000);
    for (let i = 0; i < 200; i++) t.set(`p:tenant:${i}`, value);
    expect(t.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(t.get('p:tenant:199')).toBe(value);
    expect(t.get('p:tenant:0')).toBeUndefined();
  });

  it('should expire entries after its TTL or the store TTL, whichever is shorter', async () => {
    const t = tier(1024 * 1024, 80);
    t.set('p:tenant:1', '1');
    t.set('p:tenant:2', '2', 0.02);
    await new Promise((r) => setTimeout(r, 40));
    expect([t.get('p:tenant:1'), t.get('p:tenant:2')]).toEqual(['1', undefined]);
    await new Promise((r) => setTimeout(r, 60));
    expect(t.get('p:tenant:1')).toBeUndefined();
  });

  it('should decode only well-formed messages', () => {
    expect(decodeTierMessage('{"o":"a","op":"set","key":"k","v":"v"}')).toEqual({
      o: 'a',
      op: 'set',
      key: 'k',
      v: 'v',
    });
    expect(decodeTierMessage('{"o":"a","op":"del","keys":["k"]}')).toEqual({
      o: 'a',
      op: 'del',
      keys: ['k'],
    });
    for (const bad of [
      'nope',
      '{}',
      '{"o":"a","op":"set","key":"k"}',
      '{"o":"a","op":"del","keys":[1]}',
      '{"o":1,"op":"delp","pattern":"x"}',
    ])
      expect(decodeTierMessage(bad)).toBeUndefined();
  });

  it('should not keep a value read from the shared store while a deletion happened (read/delete race)', () => {
    const t = tier();
    const epoch = t.epoch; // a read of Redis starts…
    t.delete(['p:user:1:2']); // …a deletion (local, or heard from another instance) lands…
    t.setIfUnchanged('p:user:1:2', '{"stale":true}', epoch); // …and the old answer arrives.
    expect(t.get('p:user:1:2')).toBeUndefined();
    t.setIfUnchanged('p:user:1:2', '{"fresh":true}', t.epoch);
    expect(t.get('p:user:1:2')).toBe('{"fresh":true}');
    const before = t.epoch;
    t.apply({ o: 'other', op: 'delp', pattern: 'p:user:1:*' });
    expect(t.epoch).toBeGreaterThan(before);
  });
});
