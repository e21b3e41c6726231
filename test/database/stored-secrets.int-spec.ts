import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { keyRing } from '../../src/config/key-ring';
import {
  decryptConnectionString,
  encryptConnectionString,
  storedKeyId,
} from '../../src/database/connections/connection-string.crypto';
import { rotateStoredSecrets } from '../../src/database/secrets/stored-secrets';
import { createTestDatabase, migratedDataSource, TestDatabase, testDialect } from '../support/test-database';

const OLD = randomBytes(32);
const NEW = randomBytes(32);
const STRANGER = randomBytes(32);

/** The form written before key ids (no id), as an earlier release stored it. */
function encryptV1(plain: string, master: Buffer): string {
  const key = Buffer.from(
    hkdfSync('sha256', master, Buffer.alloc(0), Buffer.from('mtb:app_connections:v1'), 32),
  );
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `enc:v1:${iv.toString('hex')}:${cipher.getAuthTag().toString('hex')}:${ct.toString('hex')}`;
}

/**
 * `npm run keys:rotate`'s pass (D57) on a real database of every dialect: every stored secret ends
 * under the current key, whatever form and key it had; a second run changes nothing; a run stopped
 * half-way is finished by the next; a value no accepted key opens is reported and left alone.
 */
describe(`Stored secret rotation (D57) on ${testDialect()}`, () => {
  let db: TestDatabase;
  let ds: DataSource;
  const url = (i: number) => `postgres://u${i}:p%40ss${i}@db${i}.example.test:5432/erp`;

  beforeAll(async () => {
    db = await createTestDatabase('stored_secrets');
    ds = await migratedDataSource(db);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  beforeEach(async () => {
    await ds.createQueryBuilder().delete().from('app_connections').execute();
  });

  async function insert(rows: { code: string; stored: string; tenant?: number | null; deleted?: boolean }[]) {
    for (const r of rows) {
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_connections')
        .values({
          con_code: r.code,
          con_connection_string: r.stored,
          con_connection_type: 'postgresql',
          con_tenant_id: r.tenant === undefined ? 1 : r.tenant,
          con_status: 1,
          con_is_deleted: r.deleted ?? false,
        })
        .execute();
    }
  }

  const stored = async () =>
    (
      await ds
        .createQueryBuilder()
        .select('c.con_code', 'code')
        .addSelect('c.con_connection_string', 'value')
        .from('app_connections', 'c')
        .orderBy('c.con_id')
        .getRawMany<{ code: string; value: string }>()
    ).map((r) => ({ code: r.code, value: r.value }));

  it('should bring every form and key under the current key, across tenants and deleted rows, once', async () => {
    await insert([
      { code: 'v1old', stored: encryptV1(url(1), OLD) },
      { code: 'v2old', stored: encryptConnectionString(url(2), OLD), tenant: 2 },
      { code: 'v2new', stored: encryptConnectionString(url(3), NEW), tenant: null },
      { code: 'deleted', stored: encryptConnectionString(url(4), OLD), deleted: true },
    ]);
    const before = await stored();
    const ring = keyRing(NEW, [OLD]);
    const [counts] = [...(await rotateStoredSecrets(ds, ring)).values()];
    expect(counts).toMatchObject({ scanned: 4, reencrypted: 3, current: 1, failed: 0, changed: 0 });
    const after = await stored();
    const onlyNew = keyRing(NEW);
    after.forEach((row, i) => {
      expect(storedKeyId(row.value)).toBe(ring.current.id);
      expect(decryptConnectionString(row.value, onlyNew)).toBe(url(i + 1));
    });
    // The row already under the new key is not rewritten.
    expect(after[2].value).toBe(before[2].value);

    const [again] = [...(await rotateStoredSecrets(ds, ring)).values()];
    expect(again).toMatchObject({ scanned: 4, reencrypted: 0, current: 4 });
    expect(await stored()).toEqual(after);
  });

  it('should finish on the next run what a run stopped half-way left', async () => {
    await insert(
      Array.from({ length: 130 }, (_, i) => ({
        code: `c${i}`,
        stored: encryptConnectionString(url(i), OLD),
      })),
    );
    const ring = keyRing(NEW, [OLD]);
    const crash = new Error('killed');
    await expect(
      rotateStoredSecrets(ds, ring, () => {
        throw crash;
      }),
    ).rejects.toBe(crash);
    const half = await stored();
    const done = half.filter((r) => storedKeyId(r.value) === ring.current.id).length;
    expect(done).toBe(100);
    const [rest] = [...(await rotateStoredSecrets(ds, ring)).values()];
    expect(rest).toMatchObject({ scanned: 130, reencrypted: 30, current: 100 });
    (await stored()).forEach((r, i) => expect(decryptConnectionString(r.value, keyRing(NEW))).toBe(url(i)));
  });

  it('should report a value no accepted key opens, by row id only, and leave it as it is', async () => {
    const foreign = encryptConnectionString(url(1), STRANGER);
    await insert([
      { code: 'foreign', stored: foreign },
      { code: 'fine', stored: encryptConnectionString(url(2), OLD) },
    ]);
    const [counts] = [...(await rotateStoredSecrets(ds, keyRing(NEW, [OLD]))).values()];
    expect(counts).toMatchObject({ scanned: 2, reencrypted: 1, failed: 1 });
    expect(counts.failedKeys).toEqual([expect.stringMatching(/^app_connections\.con_id=\d+$/)]);
    expect(JSON.stringify(counts)).not.toContain('example.test');
    expect((await stored())[0].value).toBe(foreign);
  });

  it('should re-encrypt webhook signing secrets too, under their own purpose (D54)', async () => {
    await ds.createQueryBuilder().delete().from('app_webhooks').execute();
    const secret = 'whsec_' + randomBytes(32).toString('base64');
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_webhooks')
      .values({
        whk_code: 'rotated',
        whk_url: 'https://hooks.example.test/x',
        whk_secret: encryptConnectionString(secret, OLD, 'mtb:app_webhooks:v1'),
        whk_cursor: 0,
        whk_tenant_id: 1,
        whk_status: 1,
        whk_is_deleted: false,
      })
      .execute();
    const results = await rotateStoredSecrets(ds, keyRing(NEW, [OLD]));
    const webhooks = [...results].find(([t]) => t.table === 'app_webhooks')![1];
    expect(webhooks).toMatchObject({ scanned: 1, reencrypted: 1, failed: 0 });
    const [row] = await ds.query(`SELECT whk_secret AS v FROM app_webhooks WHERE whk_code = 'rotated'`);
    const stored = String((row as { v: string }).v);
    expect(decryptConnectionString(stored, keyRing(NEW), 'mtb:app_webhooks:v1')).toBe(secret);
    // Under the connections' purpose the same key opens nothing: the two kinds stay apart.
    expect(() => decryptConnectionString(stored, keyRing(NEW))).toThrow(/cannot be decrypted/);
  });
});
