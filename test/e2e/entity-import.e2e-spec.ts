import type { AddressInfo } from 'node:net';
import ExcelJS from 'exceljs';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/**
 * D53: `POST /api/v1/{entity_code}/imports` as a job — create, dry run, abort vs skip, header
 * mapping, the export's formula prefix, masked cells, XLSX, the error file, limits, bad files and
 * tenant isolation of the job and its status.
 */
describe('Imports (D53)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  const tenantOf: Record<string, string> = {
    acmeAdmin: TENANT.acme,
    acmeViewer: TENANT.acme,
    globexAdmin: TENANT.globex,
  };

  beforeAll(async () => {
    t = await startTestApp({
      label: 'entity-import',
      env: { IMPORT_MAX_ROWS: '20', IMPORT_MAX_BYTES: '20000' },
    });
    ds = t.app.get(DatabaseService).dataSource;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeViewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const headers = (who: string, type?: string) => ({
    ...authHeaders(tenantOf[who], token[who]),
    ...(type ? { 'content-type': type } : {}),
  });
  const upload = (body: string | Buffer, query = '', who = 'acmeAdmin', type = 'text/csv') =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/customers/imports${query}`,
      headers: headers(who, type),
      payload: body,
    });
  const status = (id: string, who = 'acmeAdmin') =>
    t.app.inject({ method: 'GET', url: `/api/v1/imports/${id}`, headers: headers(who) });

  async function finished(id: string): Promise<Json> {
    for (let i = 0; i < 400; i++) {
      const res = await status(id);
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      if (!['PENDING', 'RUNNING'].includes(data.status as string)) return data;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`import ${id} did not finish`);
  }
  async function imported(body: string | Buffer, query = '', type = 'text/csv'): Promise<Json> {
    const res = await upload(body, query, 'acmeAdmin', type);
    expect(res.statusCode).toBe(202);
    const queued = res.json().data as Json;
    expect(queued).toMatchObject({ status: 'PENDING', entity: 'customers' });
    return finished(queued.importId as string);
  }
  interface Customer {
    name: string;
    email: string;
    phone: string | null;
    tenant: unknown;
  }
  async function customersNamed(prefix: string): Promise<Customer[]> {
    return ds
      .createQueryBuilder()
      .select([
        'c.cus_name AS name',
        'c.cus_email AS email',
        'c.cus_phone AS phone',
        'c.cus_tenant_id AS tenant',
      ])
      .from('demo_customers', 'c')
      .where('c.cus_name LIKE :p', { p: `${prefix}%` })
      .orderBy('c.cus_name')
      .getRawMany<Customer>();
  }

  let serial = 0;
  const unique = (label: string) => `Imp${++serial} ${label}`;

  it('should create every row of a CSV (headers by field code, case-blind, BOM dropped)', async () => {
    const p = unique('create');
    const csv = `\uFEFFName,EMAIL,tier,credit_limit\r\n${p} A,imp-${serial}-a@acme.example,silver,100\r\n${p} B,imp-${serial}-b@acme.example,gold,200\r\n`;
    const job = await imported(csv);
    expect(job).toMatchObject({
      status: 'COMPLETED',
      total: 2,
      created: 2,
      failed: 0,
      skipped: 0,
      errors: [],
    });
    const rows = await customersNamed(p);
    expect(rows.map((r) => [r.name, Number(r.tenant)])).toEqual([
      [`${p} A`, 1],
      [`${p} B`, 1],
    ]);
  });

  it('should write nothing on a dry run and still count and report', async () => {
    const p = unique('dry');
    const csv = `name,email,tier\n${p} A,imp-${serial}-a@acme.example,silver\n${p} B,imp-${serial}-b@acme.example,platinum\n`;
    const job = await imported(csv, '?dryRun=true&onError=skip');
    expect(job).toMatchObject({ status: 'COMPLETED', dryRun: true, total: 2, created: 1, failed: 1 });
    expect(job.errors).toEqual([{ row: 3, field: 'tier', error: expect.any(String) }]);
    expect(await customersNamed(p)).toEqual([]);
  });

  it('should write nothing when a row fails with onError=abort (the default)', async () => {
    const p = unique('abort');
    const csv = `name,email,tier\n${p} A,imp-${serial}-a@acme.example,silver\n${p} B,not-an-email,silver\n`;
    const job = await imported(csv);
    expect(job).toMatchObject({ status: 'COMPLETED', created: 0, skipped: 1, failed: 1 });
    expect(job.errors[0]).toMatchObject({ row: 3, field: 'email' });
    expect(await customersNamed(p)).toEqual([]);
  });

  it('should write the good rows with onError=skip and serve the failed ones as an error file', async () => {
    const p = unique('skip');
    const csv = `name,email,tier\n${p} A,imp-${serial}-a@acme.example,silver\n${p} B,not-an-email,silver\n${p} C,imp-${serial}-a@acme.example,silver\n`;
    const job = await imported(csv, '?onError=skip');
    expect(job).toMatchObject({ status: 'COMPLETED', created: 1, failed: 2, skipped: 0 });
    expect((job.errors as Array<{ row: number; field: string }>).map((e) => [e.row, e.field])).toEqual([
      [3, 'email'],
      [4, 'email'],
    ]);
    expect((await customersNamed(p)).map((r) => r.name)).toEqual([`${p} A`]);
    const file = await t.app.inject({
      method: 'GET',
      url: job.errorFileUrl as string,
      headers: headers('acmeAdmin'),
    });
    expect(file.statusCode).toBe(200);
    const lines = file.body.trim().split(/\r\n/);
    expect(lines[0]).toBe('name,email,tier,error');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain(`${p} B,not-an-email,silver,email:`);
    // The error file is its tenant's only.
    const other = await t.app.inject({
      method: 'GET',
      url: job.errorFileUrl as string,
      headers: headers('globexAdmin'),
    });
    expect(other.statusCode).toBe(404);
  });

  it('should check uniqueness against the table and inside the file, as a single create does', async () => {
    const p = unique('uniq');
    const taken = `imp-${serial}-taken@acme.example`;
    const made = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: headers('acmeAdmin'),
      payload: { name: `${p} first`, email: taken, tier: 'silver' },
    });
    expect(made.statusCode).toBe(201);
    // What a single create answers for each value the file holds.
    const single = async (email: string) =>
      (
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/customers',
          headers: headers('acmeAdmin'),
          payload: { name: `${p} probe`, email, tier: 'silver' },
        })
      ).statusCode;
    const upper = taken.toUpperCase();
    const expectedUpper = await single(upper);
    if (expectedUpper === 201) await ds.query(`DELETE FROM demo_customers WHERE cus_name = '${p} probe'`);
    const fresh = `imp-${serial}-fresh@acme.example`;
    const csv = `name,email,tier\n${p} A,${taken},silver\n${p} B,${upper},silver\n${p} C,${fresh},silver\n${p} D,${fresh},silver\n`;
    const job = await imported(csv, '?onError=skip');
    const failedRows = (job.errors as Array<{ row: number; field: string }>).map((e) => [e.row, e.field]);
    expect(failedRows).toEqual([
      [2, 'email'],
      ...(expectedUpper === 201 ? [] : [[3, 'email']]),
      [5, 'email'],
    ]);
    expect(job).toMatchObject({ status: 'COMPLETED', created: expectedUpper === 201 ? 2 : 1 });
    expect((await customersNamed(`${p} `)).map((r) => r.name)).toEqual(
      [`${p} C`, ...(expectedUpper === 201 ? [`${p} B`] : []), `${p} first`].sort(),
    );
  });

  it('should follow an explicit mapping, undo the export formula prefix and ignore unknown columns', async () => {
    const p = unique('map');
    const csv = `Customer,Mail,Tier,Notes\n'=${p} SUM(A1),imp-${serial}@acme.example,silver,whatever\n`;
    const mapping = encodeURIComponent(JSON.stringify({ Customer: 'name', Mail: 'email' }));
    const job = await imported(csv, `?mapping=${mapping}`);
    expect(job).toMatchObject({ status: 'COMPLETED', created: 1, ignoredColumns: ['Notes'] });
    expect((await customersNamed(`=${p}`)).map((r) => r.name)).toEqual([`=${p} SUM(A1)`]);
  });

  it('should never store a masked value as data (D43)', async () => {
    const p = unique('masked');
    const csv = `name,email,tier,phone\n${p} A,imp-${serial}-a@acme.example,silver,************4242\n${p} B,imp-${serial}-b@acme.example,silver,+1 555 0100 7777\n`;
    const job = await imported(csv);
    expect(job).toMatchObject({ status: 'COMPLETED', created: 2 });
    const rows = await customersNamed(p);
    expect(rows[0].phone ?? null).toBeNull();
    expect(rows[1].phone).toBe('+1 555 0100 7777');
  });

  it('should upsert by a unique field: update the records it finds, create the others', async () => {
    const p = unique('upsert');
    const a = `imp-${serial}-a@acme.example`;
    const b = `imp-${serial}-b@acme.example`;
    expect(await imported(`name,email,tier\n${p} A,${a},silver\n`)).toMatchObject({ created: 1 });
    const before = await customersNamed(p);
    const dry = await imported(
      `name,email,tier\n${p} A2,${a},gold\n${p} B,${b},silver\n`,
      '?mode=upsert&key=email&dryRun=true',
    );
    expect(dry).toMatchObject({ status: 'COMPLETED', mode: 'upsert', created: 1, updated: 1, failed: 0 });
    expect(await customersNamed(p)).toEqual(before);
    const job = await imported(
      `name,email,tier\n${p} A2,${a},gold\n${p} B,${b},silver\n`,
      '?mode=upsert&key=email',
    );
    expect(job).toMatchObject({ status: 'COMPLETED', created: 1, updated: 1, failed: 0 });
    expect((await customersNamed(p)).map((r) => [r.name, r.email])).toEqual([
      [`${p} A2`, a],
      [`${p} B`, b],
    ]);
    // By id: the id column names the record; another tenant's id is not found, so the row creates.
    const id = (
      await ds
        .createQueryBuilder()
        .select('c.cus_id', 'id')
        .from('demo_customers', 'c')
        .where('c.cus_email = :e', { e: b })
        .getRawOne<{ id: unknown }>()
    )?.id;
    const byId = await imported(`id,name\n${String(id)},${p} B2\n`, '?mode=upsert&key=id');
    expect(byId).toMatchObject({ status: 'COMPLETED', updated: 1, created: 0 });
    expect((await customersNamed(`${p} B`)).map((r) => r.name)).toEqual([`${p} B2`]);
  });

  it('should round-trip an export, CSV and XLSX: the formula prefix is undone (D48)', async () => {
    const marker = `Rt${Date.now()}`;
    const name = `=${marker}("x")`;
    const made = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: headers('acmeAdmin'),
      payload: { name, email: `${marker.toLowerCase()}@acme.example`, tier: 'silver', credit_limit: 5 },
    });
    expect(made.statusCode).toBe(201);
    for (const [format, type] of [
      ['csv', 'text/csv'],
      ['excel', XLSX],
    ] as const) {
      const exported = await t.app.inject({
        method: 'POST',
        url: '/api/v1/dataviews/customers_grid/export',
        headers: headers('acmeAdmin'),
        payload: { format, search: marker },
      });
      expect(exported.statusCode).toBe(200);
      const file = await t.app.inject({
        method: 'GET',
        url: exported.json().data.downloadUrl as string,
        headers: headers('acmeAdmin'),
      });
      expect(file.rawPayload.includes(Buffer.from(`'=${marker}`))).toBe(format === 'csv');
      const job = await imported(file.rawPayload, '?mode=upsert&key=email', type);
      expect(job).toMatchObject({ status: 'COMPLETED', total: 1, updated: 1, created: 0, failed: 0 });
      expect((await customersNamed(`=${marker}`)).map((r) => r.name)).toEqual([name]);
    }
  });

  it('should read an XLSX written by exceljs', async () => {
    const p = unique('xlsx');
    const workbook = new ExcelJS.Workbook();
    const sheet = workbook.addWorksheet('Data');
    sheet.addRow(['name', 'email', 'tier', 'credit_limit']);
    sheet.addRow([`${p} A`, `imp-${serial}-a@acme.example`, 'gold', 300]);
    sheet.addRow([`${p} B`, `imp-${serial}-b@acme.example`, 'silver', 400]);
    const buffer = Buffer.from(await workbook.xlsx.writeBuffer());
    const job = await imported(buffer, '', XLSX);
    expect(job).toMatchObject({ status: 'COMPLETED', total: 2, created: 2, failed: 0 });
    expect((await customersNamed(p)).map((r) => r.name)).toEqual([`${p} A`, `${p} B`]);
  });

  it('should fail the job (not 500) for a ragged CSV and write nothing', async () => {
    const p = unique('ragged');
    const job = await imported(`name,email,tier\n${p} A,imp-${serial}@acme.example,silver\n${p} B,x\n`);
    expect(job).toMatchObject({ status: 'FAILED', error: { code: 'VALIDATION_ERROR' } });
    expect(await customersNamed(p)).toEqual([]);
  });

  it('should answer 400 for a file that is not UTF-8 or not a workbook, 415 for another type', async () => {
    const latin1 = Buffer.from('name\n\xe9t\xe9\n', 'latin1');
    expect((await upload(latin1)).statusCode).toBe(400);
    const bad = await upload(Buffer.from('not a zip at all'), '', 'acmeAdmin', XLSX);
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe('VALIDATION_ERROR');
    expect((await upload('name\nx\n', '', 'acmeAdmin', 'text/plain')).statusCode).toBe(415);
    expect((await upload('name\nx\n', '?onError=maybe')).statusCode).toBe(400);
    expect((await upload('name\nx\n', '?mode=upsert')).statusCode).toBe(400);
    expect((await upload('name\nx\n', '?mode=upsert&key=tier')).statusCode).toBe(400);
  });

  it('should refuse a file beyond IMPORT_MAX_BYTES (413) and fail one beyond IMPORT_MAX_ROWS (413)', async () => {
    const big = await upload(`name\n${'x'.repeat(30_000)}\n`);
    expect(big.statusCode).toBe(413);
    const p = unique('rows');
    const rows = Array.from({ length: 21 }, (_, i) => `${p} ${i},imp-${serial}-${i}@acme.example,silver`);
    const job = await imported(`name,email,tier\n${rows.join('\n')}\n`);
    expect(job).toMatchObject({ status: 'FAILED', error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(await customersNamed(p)).toEqual([]);
  });

  it('should refuse a user who may not create (403) and keep a job from other tenants (404)', async () => {
    expect((await upload('name\nx\n', '', 'acmeViewer')).statusCode).toBe(403);
    const p = unique('iso');
    const res = await upload(`name,email,tier\n${p},imp-${serial}@acme.example,silver\n`);
    const id = res.json().data.importId as string;
    await finished(id);
    expect((await status(id, 'globexAdmin')).statusCode).toBe(404);
    const cancel = await t.app.inject({
      method: 'POST',
      url: `/api/v1/imports/${id}/cancel`,
      headers: headers('globexAdmin'),
    });
    expect(cancel.statusCode).toBe(404);
    expect((await status('999999')).statusCode).toBe(404);
  });

  it('should skip the batches a claim before committed when the job runs again (no row written twice)', async () => {
    const p = unique('resume');
    const rows = Array.from({ length: 3 }, (_, i) => `${p} ${i},imp-${serial}-${i}@acme.example,silver`);
    const bad = `${p} bad,not-an-email,silver`;
    const first = await imported(`name,email,tier\n${[...rows, bad].join('\n')}\n`, '?onError=skip');
    expect(first).toMatchObject({ status: 'COMPLETED', created: 3, failed: 1 });
    // As if its worker had died after committing: the job is claimable again, its first start kept.
    await ds
      .createQueryBuilder()
      .update('app_jobs')
      .set({
        job_status: 'PENDING',
        job_finished_at: null,
        job_result: null,
        job_lease_owner: null,
        job_lease_until: null,
        job_started_at: new Date(Date.now() - 60_000),
      })
      .where('job_public_id = :id', { id: first.importId as string })
      .execute();
    const again = await finished(first.importId as string);
    // The batch's record stands for it: the same counts, errors and error file, nothing written again.
    expect(again).toMatchObject({ status: 'COMPLETED', created: 3, failed: 1, errors: first.errors });
    expect(again.errorFileUrl).toEqual(expect.any(String));
    expect(await customersNamed(p)).toHaveLength(3);
    // The record is its tenant's (the tenant-owned table list holds it).
    const records = await ds
      .createQueryBuilder()
      .select('b.imb_tenant_id', 'tenant')
      .from('app_import_batches', 'b')
      .innerJoin('app_jobs', 'j', 'j.job_id = b.imb_job_id')
      .where('j.job_public_id = :id', { id: first.importId as string })
      .getRawMany<{ tenant: unknown }>();
    expect(records.map((r) => Number(r.tenant))).toEqual([1]);
  });

  describe('multipart/form-data (a real multipart body over a socket)', () => {
    let base = '';
    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    });
    const send = async (form: FormData, query = '', url = '/api/v1/customers/imports') => {
      const res = await fetch(`${base}${url}${query}`, {
        method: 'POST',
        headers: headers('acmeAdmin'),
        body: form,
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const formOf = (parts: Array<[string, Blob | string, string?]>) => {
      const form = new FormData();
      for (const [name, value, filename] of parts)
        if (typeof value === 'string') form.append(name, value);
        else form.append(name, value, filename);
      return form;
    };

    it('should import the part named file, CSV by default and XLSX by its name or type', async () => {
      const p = unique('multipart');
      const csv = `name,email,tier\n${p} A,imp-${serial}-a@acme.example,silver\n`;
      const res = await send(formOf([['file', new Blob([csv]), 'customers.csv']]), '?onError=skip');
      expect(res.status).toBe(202);
      expect(await finished(res.body.data.importId as string)).toMatchObject({
        status: 'COMPLETED',
        onError: 'skip',
        created: 1,
      });
      const workbook = new ExcelJS.Workbook();
      const sheet = workbook.addWorksheet('Data');
      sheet.addRow(['name', 'email', 'tier']);
      sheet.addRow([`${p} B`, `imp-${serial}-b@acme.example`, 'gold']);
      const xlsx = Buffer.from(await workbook.xlsx.writeBuffer());
      for (const [label, blob, filename] of [
        ['by name', new Blob([xlsx]), 'customers.xlsx'],
        ['by type', new Blob([xlsx], { type: XLSX }), 'upload.bin'],
      ] as const) {
        const r = await send(formOf([['file', blob, filename]]), '?mode=upsert&key=email');
        expect([label, r.status]).toEqual([label, 202]);
        expect(await finished(r.body.data.importId as string)).toMatchObject({
          status: 'COMPLETED',
          total: 1,
        });
      }
      expect((await customersNamed(p)).map((r) => r.name)).toEqual([`${p} A`, `${p} B`]);
    });

    it('should refuse a file beyond IMPORT_MAX_BYTES (413), an unknown form field and a missing part (400)', async () => {
      const big = await send(formOf([['file', new Blob([`name\n${'x'.repeat(30_000)}\n`]), 'big.csv']]));
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
      const field = await send(
        formOf([
          ['other', 'x'],
          ['file', new Blob(['name\nx\n']), 'a.csv'],
        ]),
      );
      expect(field.status).toBe(400);
      expect(field.body.error.details[0]).toMatchObject({ field: 'other', error: /not an import option/ });
      const none = await send(formOf([['other', new Blob(['name\nx\n']), 'a.csv']]));
      expect(none.status).toBe(400);
      const latin1 = await send(
        formOf([['file', new Blob([Buffer.from('name\n\xe9t\xe9\n', 'latin1')]), 'a.csv']]),
      );
      expect(latin1.status).toBe(400);
      expect(latin1.body.error.code).toBe('VALIDATION_ERROR');
      const notZip = await send(formOf([['file', new Blob(['not a zip']), 'a.xlsx']]));
      expect(notZip.status).toBe(400);
      // Another route refuses a multipart body, as any body but JSON.
      const other = await send(formOf([['name', 'x']]), '', '/api/v1/customers');
      expect(other.status).toBe(415);
      // Another tenant's user cannot start an import into acme (its token is globex's).
      const res = await fetch(`${base}/api/v1/customers/imports`, {
        method: 'POST',
        headers: { ...authHeaders(TENANT.acme, token.globexAdmin) },
        body: formOf([['file', new Blob(['name\nx\n']), 'a.csv']]),
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
    });
  });

  it('should cancel an import of its creator (a finished one answers as it is)', async () => {
    const p = unique('cancel');
    const res = await upload(`name,email,tier\n${p},imp-${serial}@acme.example,silver\n`);
    const id = res.json().data.importId as string;
    const cancel = await t.app.inject({
      method: 'POST',
      url: `/api/v1/imports/${id}/cancel`,
      headers: headers('acmeAdmin'),
    });
    expect(cancel.statusCode).toBe(200);
    expect(['CANCELLED', 'COMPLETED']).toContain(cancel.json().data.status);
    const done = await finished(id);
    expect(done.status).toBe(cancel.json().data.status === 'CANCELLED' ? 'CANCELLED' : 'COMPLETED');
  });
});
