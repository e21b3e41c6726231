import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Issue 34 #5: a bulk row's id that is not an integer — an operator object, an array, a float, a
 * string of non-digits — answers 400 VALIDATION_ERROR naming the field, and nothing is written; it
 * was a row "customers NaN not found". An integer outside the key's range names no record: that row
 * answers 404 with the id as given (D45).
 */
describe('Bulk row ids (issue 34 #5)', () => {
  let t: TestApp;
  let ds: DataSource;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'bulk-row-ids' });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const bulk = (payload: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/customers/bulk',
      headers: authHeaders(TENANT.acme, token),
      payload: payload as Record<string, unknown>,
    });
  const customers = async () =>
    JSON.stringify(
      await ds
        .createQueryBuilder()
        .select('r.*')
        .from('demo_customers', 'r')
        .orderBy('r.cus_id')
        .getRawMany(),
    );
  const firstAcmeCustomer = async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?limit=1',
      headers: authHeaders(TENANT.acme, token),
    });
    return res.json().data.records[0] as { id: number; lastModified: string };
  };

  const notIntegers: [string, unknown][] = [
    ['an operator object', { $gt: 0 }],
    ['an array', [1]],
    ['a float', 1.5],
    ['a boolean', true],
    ['a string of non-digits', 'abc'],
    ['a negative number as a string', '-1'],
    ['a float as a string', '1.5'],
    ['an empty string', ''],
  ];

  it.each(notIntegers)(
    'should answer 400 naming ids[n] for %s in a delete and delete nothing',
    async (_name, id) => {
      const { id: real } = await firstAcmeCustomer();
      const before = await customers();
      const res = await bulk({ operation: 'delete', ids: [real, id] });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'ids[1]', error: expect.stringMatching(/^must be a record id/) }],
      });
      expect(res.body).not.toContain('NaN');
      expect(await customers()).toBe(before);
    },
  );

  it.each(notIntegers)(
    'should answer 400 naming records[n].id for %s in an update and change nothing',
    async (_name, id) => {
      const real = await firstAcmeCustomer();
      const before = await customers();
      const res = await bulk({
        operation: 'update',
        records: [
          { id: real.id, name: 'Renamed by a bad batch', lastModified: real.lastModified },
          { id, name: 'Injected', lastModified: real.lastModified },
        ],
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'records[1].id', error: expect.stringMatching(/^must be a record id/) }],
      });
      expect(res.body).not.toContain('NaN');
      expect(await customers()).toBe(before);
    },
  );

  it.each([
    ['zero', 0],
    ['a negative integer', -1],
    ['an integer beyond INT', 2147483648],
    ['digits beyond INT', '99999999999'],
  ])('should answer a 404 row naming the id for %s, as the single route would (D45)', async (_name, id) => {
    const before = await customers();
    const res = await bulk({ operation: 'delete', ids: [id] });
    expect(res.statusCode).toBe(200);
    const row = res.json().data.results[0];
    expect(row).toMatchObject({ index: 0, status: 404, error: { code: 'NOT_FOUND' } });
    expect(row.error.message).toBe(`customers ${Number(id)} not found`);
    expect(await customers()).toBe(before);
  });

  it('should still take an id given as its digits', async () => {
    const real = await firstAcmeCustomer();
    const res = await bulk({
      operation: 'update',
      records: [{ id: String(real.id), tier: 'gold', lastModified: real.lastModified }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.results[0]).toMatchObject({ id: real.id, status: 200 });
  });
});
