import { TenantDirectory } from './tenant-directory';

function directory(table: Record<string, number | undefined>, options: { maxEntries?: number } = {}) {
  let now = 1_000_000;
  const source = jest.fn(async (code: string) => table[code]);
  const dir = new TenantDirectory(source, { ttlMs: 30_000, missTtlMs: 5_000, now: () => now, ...options });
  return { dir, source, advance: (ms: number) => (now += ms) };
}

describe('TenantDirectory', () => {
  it('should remember a found tenant for the TTL, then look it up again', async () => {
    const { dir, source, advance } = directory({ acme: 1 });
    expect(await dir.resolve('acme')).toBe(1);
    advance(29_999);
    expect(await dir.resolve('acme')).toBe(1);
    expect(source).toHaveBeenCalledTimes(1);
    advance(1);
    expect(await dir.resolve('acme')).toBe(1);
    expect(source).toHaveBeenCalledTimes(2);
  });

  it('should remember a miss only briefly', async () => {
    const table: Record<string, number | undefined> = {};
    const { dir, source, advance } = directory(table);
    expect(await dir.resolve('newco')).toBeUndefined();
    table.newco = 9;
    advance(4_999);
    expect(await dir.resolve('newco')).toBeUndefined();
    advance(1);
    expect(await dir.resolve('newco')).toBe(9);
    expect(source).toHaveBeenCalledTimes(2);
  });

  it('should share one lookup between concurrent requests', async () => {
    const { dir, source } = directory({ acme: 1 });
    expect(await Promise.all([dir.resolve('acme'), dir.resolve('acme'), dir.resolve('acme')])).toEqual([
      1, 1, 1,
    ]);
    expect(source).toHaveBeenCalledTimes(1);
  });

  it('should not remember a failed lookup', async () => {
    let fail = true;
    const source = jest.fn(async () => {
      if (fail) throw new Error('database down');
      return 1;
    });
    const dir = new TenantDirectory(source, { ttlMs: 30_000, missTtlMs: 5_000 });
    await expect(dir.resolve('acme')).rejects.toThrow('database down');
    fail = false;
    expect(await dir.resolve('acme')).toBe(1);
    expect(source).toHaveBeenCalledTimes(2);
  });

  it('should keep at most maxEntries codes, dropping the oldest', async () => {
    const { dir, source } = directory({ a: 1, b: 2, c: 3 }, { maxEntries: 2 });
    await dir.resolve('a');
    await dir.resolve('b');
    await dir.resolve('c');
    expect(dir.size).toBe(2);
    await dir.resolve('a');
    expect(source).toHaveBeenCalledTimes(4);
  });

  it('should cache nothing with a TTL of 0', async () => {
    const source = jest.fn(async () => 1);
    const dir = new TenantDirectory(source, { ttlMs: 0, missTtlMs: 0 });
    await dir.resolve('acme');
    await dir.resolve('acme');
    expect(source).toHaveBeenCalledTimes(2);
  });
});
