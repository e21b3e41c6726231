import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { RecordsWriteRepository } from '../../src/records/records-write.repository';
import { authHeaders, signin, TENANT } from '../support/auth';
import { testDialect } from '../support/test-database';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * A list read while a write transaction is open, and that transaction rolled back: the rows it
 * wrote are never kept in the list cache (D27). On SQLite, whose one connection every request
 * shares, the read itself may show the uncommitted rows (the embedded mode's documented limit);
 * on the server dialects it shows committed rows only.
 */
describe('List reads beside an open write transaction', () => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'read-committed' });
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const list = async (query: string) => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/customers?${query}`,
      headers: authHeaders(TENANT.acme, token),
    });
    expect(res.statusCode).toBe(200);
    return res.json().data as { total: number; records: Array<{ name: string }> };
  };

  it('should never cache a page holding rows of a transaction that then rolls back', async () => {
    const cache = t.app.get(CacheService);
    const pattern = cache.keys.entityListAll(TENANT.acme, 'customers');
    await cache.deletePattern(pattern);
    const query = 'limit=500&sortBy=name';
    const before = await list(query);
    await cache.deletePattern(pattern);
    const ds = t.app.get(DatabaseService).dataSource;
    let during: { total: number } | undefined;
    await expect(
      t.app.get(RecordsWriteRepository).transaction(ds, async (tx) => {
        await tx.data.connection
          .createQueryBuilder(tx.data)
          .insert()
          .into('demo_customers')
          .values({
            cus_name: 'Never Committed',
            cus_email: 'never.committed@acme.example',
            cus_tenant_id: 1,
            cus_status: 1,
            cus_is_deleted: false,
          })
          .execute();
        during = await list(query);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    if (testDialect() === 'sqlite') {
      // Nothing read during the transaction was kept: the next read is the committed table.
      expect(await cache.store.keys(pattern)).toHaveLength(0);
    } else {
      // Read committed: the read saw (and may keep) the table without the transaction's row.
      expect(during?.total).toBe(before.total);
      await cache.deletePattern(pattern);
    }
    const after = await list(query);
    expect(after.total).toBe(before.total);
    expect(after.records.map((r) => r.name)).not.toContain('Never Committed');
    // A read with no transaction open is cached as before (the page and its total).
    expect(await cache.store.keys(pattern)).toHaveLength(2);
  });
});
