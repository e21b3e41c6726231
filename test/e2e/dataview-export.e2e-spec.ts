import ExcelJS from 'exceljs';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import type { DataSource } from 'typeorm';
import { createApp } from '../../src/bootstrap';
import { DatabaseService } from '../../src/database/database.service';
import { StartupService } from '../../src/health/startup.service';
import { EXPORT_STORE as EXPORT_STORE_TOKEN, ExportStore } from '../../src/dataview/download/export-store';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

/** RFC 4180 CSV (CRLF) → rows of fields. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  const field = /("(?:[^"]|"")*"|[^",\r\n]*)(,|\r\n|$)/y;
  while (field.lastIndex < text.length) {
    const m = field.exec(text)!;
    row.push(m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1]);
    if (m[2] !== ',') {
      rows.push(row);
      row = [];
    }
  }
  return rows;
}

/** The text pdfkit wrote (standard fonts: hex strings in TJ arrays), one entry per TJ. */
function pdfTexts(pdf: Buffer): string[] {
  const raw = pdf.toString('latin1');
  const out: string[] = [];
  const streams = /stream\r?\n/g;
  let m: RegExpExecArray | null;
  while ((m = streams.exec(raw))) {
    const start = m.index + m[0].length;
    const end = raw.indexOf('endstream', start);
    let content: string;
    try {
      content = inflateSync(pdf.subarray(start, end)).toString('latin1');
    } catch {
      continue;
    }
    for (const tj of content.matchAll(/\[([^\]]*)\]\s*TJ/g))
      out.push(
        [...tj[1].matchAll(/<([0-9a-fA-F]*)>/g)]
          .map((h) => Buffer.from(h[1], 'hex').toString('latin1'))
          .join(''),
      );
  }
  return out;
}

const COUNT_FILES = 'SELECT COUNT(*) AS n FROM app_export_files';

const pageCount = (pdf: Buffer) => (pdf.toString('latin1').match(/\/Type \/Page\b/g) ?? []).length;

describe('Dataview exports and downloads (spec §4.4 rule 8, D32, D48)', () => {
  let t: TestApp;
  let ds: DataSource;
  let dir: string;
  const token: Record<string, string> = {};

  const exportOf = (code: string, payload: Rec, who = token.admin, tenant: string = TENANT.acme) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/dataviews/${code}/export`,
      headers: authHeaders(tenant, who),
      payload,
    });
  const download = (url: string, who = token.admin, tenant: string = TENANT.acme, app = t) =>
    app.app.inject({ method: 'GET', url, headers: authHeaders(tenant, who) });
  /** Exports and downloads; the file's bytes. */
  const file = async (code: string, body: Rec, who = token.admin): Promise<Buffer> => {
    const res = await exportOf(code, body, who);
    const dl = await download(res.json().data.downloadUrl, who);
    expect([res.statusCode, dl.statusCode]).toEqual([200, 200]);
    return dl.rawPayload;
  };
  /** Every row the data route answers for these parameters, page after page. */
  const allRows = async (code: string, params: Rec): Promise<{ rows: Rec[]; aggregates?: Rec }> => {
    const rows: Rec[] = [];
    let aggregates: Rec | undefined;
    let cursor: string | undefined;
    for (let page = 0; ; page++) {
      const q = {
        ...params,
        ...(cursor ? { cursor } : code === 'orders_grid' ? {} : { page }),
        pageSize: 100,
      };
      const qs = Object.entries(q).map(
        ([k, v]) => `${k}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`,
      );
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/dataviews/${code}/data?${qs.join('&')}`,
        headers: authHeaders(TENANT.acme, token.admin),
      });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      rows.push(...body.data);
      aggregates = body.aggregates;
      if (body.pagination.nextCursor !== undefined) {
        cursor = body.pagination.nextCursor ?? undefined;
        if (!cursor) break;
      } else if (rows.length >= body.pagination.total) break;
    }
    return { rows, aggregates };
  };
  const insertDataview = (code: string, config: Rec) =>
    ds
      .createQueryBuilder()
      .insert()
      .into('app_dataview_configs')
      .values({
        ...{ dvc_tenant_id: 1, dvc_code: code, dvc_description: code, dvc_source_entity: 'customers' },
        ...{ dvc_config: JSON.stringify(config), dvc_is_default: false, dvc_status: 1, dvc_is_deleted: 0 },
      })
      .execute();
  const csvCell = (v: string | number | boolean | null | undefined) =>
    v === null || v === undefined ? '' : String(v);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'exports-'));
    t = await startTestApp({ label: 'dataview-export', env: { EXPORT_DIR: dir } });
    ds = t.app.get(DatabaseService).dataSource;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: authHeaders(TENANT.acme, token.admin),
      payload: { name: '=HYPERLINK("x")', email: 'formula@acme.example', tier: 'gold', credit_limit: 1 },
    });
    expect(created.statusCode).toBe(201);
    await insertDataview('customers_contact', {
      dataviewName: 'Contacts',
      columns: [
        { fieldCode: 'name', columnName: 'Name', columnOrder: 1 },
        { fieldCode: 'phone', columnName: 'Phone', columnOrder: 2 },
        { fieldCode: 'internal_notes', columnName: 'Notes', columnOrder: 3 },
      ],
      export: { enableExport: true, exportFormats: ['csv', 'excel', 'pdf'], exportFilename: 'contacts' },
    });
  });

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  describe('CSV', () => {
    it('should hold every row the data route answers for the same filters and sort, in its order', async () => {
      const filters = [{ fieldCode: 'tier', operator: 'in', value: ['gold', 'silver'] }];
      const sort = [{ fieldCode: 'credit_limit', direction: 'desc' }];
      const res = await exportOf('customers_grid', { format: 'csv', filters, sort });
      expect(res.statusCode).toBe(200);
      const { filename, downloadUrl } = res.json().data;
      expect(filename).toBe(`customers_${new Date().toISOString().slice(0, 10)}.csv`);
      expect(downloadUrl).toMatch(/^\/api\/v1\/downloads\/[A-Za-z0-9_-]{43}$/);
      const dl = await download(downloadUrl);
      expect(dl.statusCode).toBe(200);
      expect(dl.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(dl.headers['content-disposition']).toBe(`attachment; filename="${filename}"`);
      const [header, ...rows] = parseCsv(dl.body);
      expect(header).toEqual(['Name', 'E-mail', 'Tier', 'Credit limit']);
      const expected = (await allRows('customers_grid', { filters, sort })).rows;
      expect(expected.length).toBeGreaterThan(25);
      expect(rows).toEqual(
        expected.map((r): string[] => [
          String(r.name).startsWith('=') ? `'${r.name}` : String(r.name),
          csvCell(r.email),
          csvCell(r.tier),
          csvCell(r.credit_limit),
        ]),
      );
    });

    it('should export the default filters and sort of a cursor grid, all rows', async () => {
      const [header, ...rows] = parseCsv((await file('orders_grid', { format: 'csv' })).toString('utf8'));
      expect(header).toEqual(['Order #', 'Customer', 'Amount', 'Status', 'Ordered at']);
      const expected = (await allRows('orders_grid', {})).rows;
      expect(rows.map((r) => Number(r[0]))).toEqual(expected.map((r) => Number(r.id)));
      expect(rows.map((r) => r[2])).toEqual(expected.map((r) => csvCell(r.amount)));
      expect(rows.map((r) => r[4])).toEqual(expected.map((r) => csvCell(r.ordered_at)));
    });

    it('should prefix text cells that start a formula and leave numbers alone (D48)', async () => {
      const text = (await file('customers_grid', { format: 'csv', search: 'HYPERLINK' })).toString('utf8');
      expect(parseCsv(text)[1]).toEqual(['\'=HYPERLINK("x")', 'formula@acme.example', 'gold', '1']);
    });
  });

  describe('XLSX', () => {
    it('should hold typed cells, widths, a frozen filtered header, footer aggregates and an About sheet', async () => {
      const wb = new ExcelJS.Workbook();
      await wb.xlsx.load((await file('orders_grid', { format: 'excel' })) as any);
      const sheet = wb.getWorksheet('Data')!;
      const { rows, aggregates } = await allRows('orders_grid', {});
      expect(sheet.getRow(1).values).toEqual([
        undefined,
        'Order #',
        'Customer',
        'Amount',
        'Status',
        'Ordered at',
      ]);
      expect(sheet.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
      expect(sheet.autoFilter).toBeDefined();
      expect(sheet.getColumn(3).width).toBeCloseTo(140 / 7, 1);
      expect(sheet.rowCount).toBe(rows.length + 2);
      const first = sheet.getRow(2);
      expect(first.getCell(1).value).toBe(Number(rows[0].id));
      expect(typeof first.getCell(3).value).toBe('number');
      expect(first.getCell(3).value).toBe(rows[0].amount);
      const dated = rows.findIndex((r) => r.ordered_at);
      expect(sheet.getRow(dated + 2).getCell(5).value).toEqual(
        new Date(`${rows[dated].ordered_at}T00:00:00Z`),
      );
      const footer = sheet.getRow(rows.length + 2);
      expect(footer.getCell(3).value).toBeCloseTo(aggregates!.amount as number, 2);
      const about = wb.getWorksheet('About')!;
      const info = new Map<string, unknown>();
      about.eachRow((r) => info.set(r.getCell(1).text, r.getCell(2).value));
      expect(info.get('Dataview')).toBe('orders_grid');
      expect(info.get('Name')).toBe('Orders');
      expect(String(info.get('Filters'))).toContain('not_equals');
      expect(info.get('Sort')).toBe('ordered_at desc');
      expect(info.get('Rows')).toBe(rows.length);
      expect(info.get('Exported by')).toBe('admin@acme.test');
      expect(String(info.get('Exported at'))).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    });

    it('should prefix formula text in XLSX too', async () => {
      const wb = new ExcelJS.Workbook();
      await wb.xlsx.load((await file('customers_grid', { format: 'excel', search: 'HYPERLINK' })) as any);
      const row = wb.getWorksheet('Data')!.getRow(2);
      expect(row.getCell(1).value).toBe('\'=HYPERLINK("x")');
      expect(row.getCell(4).value).toBe(1);
    });
  });

  describe('PDF', () => {
    it('should paginate with the header row on every page', async () => {
      const res = await exportOf('customers_grid', { format: 'pdf' });
      expect(res.statusCode).toBe(200);
      const dl = await download(res.json().data.downloadUrl);
      expect(dl.headers['content-type']).toBe('application/pdf');
      const pdf = dl.rawPayload;
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
      const pages = pageCount(pdf);
      expect(pages).toBeGreaterThan(1);
      const texts = pdfTexts(pdf);
      expect(texts.filter((s) => s === 'Credit limit')).toHaveLength(pages);
      expect(texts).toContain('Customers');
      expect(texts.some((s) => s.startsWith('Filters: '))).toBe(true);
      expect(texts.some((s) => s.includes(`page ${pages}`))).toBe(true);
    });
  });

  describe('masking', () => {
    it('should mask the masked phone in every format and leave hidden fields out', async () => {
      const raw = await ds.query<Rec[]>(
        'SELECT cus_phone AS phone FROM demo_customers WHERE cus_tenant_id = 1',
      );
      const phones = raw.map((r) => String(r.phone as string)).filter((p) => p.length > 4);
      expect(phones.length).toBeGreaterThan(10);

      const [header, ...rows] = parseCsv(
        (await file('customers_contact', { format: 'csv' })).toString('utf8'),
      );
      expect(header).toEqual(['Name', 'Phone']);
      for (const r of rows) if (r[1] !== '') expect(r[1]).toMatch(/^\*+\d{4}$/);

      const wb = new ExcelJS.Workbook();
      await wb.xlsx.load((await file('customers_contact', { format: 'excel' })) as any);
      wb.getWorksheet('Data')!.eachRow((row, n) => {
        if (n > 1 && row.getCell(2).value !== null) expect(row.getCell(2).text).toMatch(/^\*+\d{4}$/);
      });

      const text = pdfTexts(await file('customers_contact', { format: 'pdf' })).join('\n');
      expect(text).toMatch(/\*+\d{4}/);
      for (const p of phones) expect(text).not.toContain(p);
    });
  });

  describe('access and validation', () => {
    it('should let the viewer (export:dataview) export and download', async () => {
      const bytes = await file('customers_grid', { format: 'csv' }, token.viewer);
      expect(parseCsv(bytes.toString('utf8')).length).toBeGreaterThan(50);
    });

    it('should refuse a tenant without the export feature (403 FEATURE_DISABLED)', async () => {
      const res = await exportOf('customers_grid', { format: 'csv' }, token.globex, TENANT.globex);
      expect([res.statusCode, res.json().error.code]).toEqual([403, 'FEATURE_DISABLED']);
    });

    it('should refuse formats the dataview does not export and malformed bodies (400)', async () => {
      const details = async (code: string, body: unknown) => {
        const res = await exportOf(code, body as Rec);
        expect([res.statusCode, res.json().error.code]).toEqual([400, 'VALIDATION_ERROR']);
        return res.json().error.details as unknown;
      };
      expect(await details('orders_grid', { format: 'pdf' })).toEqual([
        { field: 'format', error: 'this dataview exports csv, excel' },
      ]);
      expect(await details('customers_grid', { format: 'xml' })).toEqual([
        { field: 'format', error: 'must be one of csv, excel, pdf' },
      ]);
      const filter = (f: Rec) => details('customers_grid', { format: 'csv', filters: [f] });
      expect(await filter({ fieldCode: 'tier', operator: 'nope' })).toEqual([
        { field: 'filters[0].operator', error: expect.stringMatching(/^must be one of/) },
      ]);
      expect(await filter({ fieldCode: 'phone', operator: 'is_null' })).toEqual([
        { field: 'filters[0].fieldCode', error: 'unknown column' },
      ]);
      expect(await details('customers_grid', { format: 'csv', page: 2 })).toEqual([
        { field: 'page', error: 'unknown key' },
      ]);
    });

    it('should refuse a dataview whose export is disabled (400)', async () => {
      await insertDataview('no_export', {
        columns: [{ fieldCode: 'name' }],
        export: { enableExport: false, exportFormats: ['csv'] },
      });
      const res = await exportOf('no_export', { format: 'csv' });
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [{ field: 'format', error: 'export is disabled for this dataview' }],
      });
    });

    it('should serve a download only to a signed-in user of the same tenant', async () => {
      const url = (await exportOf('customers_grid', { format: 'csv' })).json().data.downloadUrl as string;
      const other = await download(url, token.globex, TENANT.globex);
      expect([other.statusCode, other.json().error.code]).toEqual([404, 'NOT_FOUND']);
      const anonymous = await t.app.inject({
        method: 'GET',
        url,
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
      });
      expect(anonymous.statusCode).toBe(401);
      const unknown = await download('/api/v1/downloads/' + 'A'.repeat(43));
      expect(unknown.statusCode).toBe(404);
      expect((await download(url)).statusCode).toBe(200);
    });
  });

  describe.each(['directory', 'database'])('the %s store', (store) => {
    let short: TestApp;
    let shortDir: string;
    const stored = async () =>
      store === 'directory'
        ? readdirSync(shortDir).length
        : Number((await short.app.get(DatabaseService).dataSource.query<Rec[]>(COUNT_FILES))[0].n);

    beforeAll(async () => {
      shortDir = mkdtempSync(join(tmpdir(), 'exports-ttl-'));
      short = await startTestApp({
        label: `dataview-export-${store}`,
        env: { EXPORT_DIR: shortDir, EXPORT_TTL_S: '2', EXPORT_STORE: store },
      });
    });

    afterAll(async () => {
      await short?.close();
      rmSync(shortDir, { recursive: true, force: true });
    });
    it('should serve whole files, then answer 404 after EXPORT_TTL_S and purge them', async () => {
      const admin = (await signin(short.app, TENANT.acme, 'admin@acme.test')).token;
      const urls: string[] = [];
      for (const format of ['csv', 'excel']) {
        const res = await short.app.inject({
          method: 'POST',
          url: '/api/v1/dataviews/customers_grid/export',
          headers: authHeaders(TENANT.acme, admin),
          payload: { format },
        });
        urls.push(res.json().data.downloadUrl as string);
      }
      const csv = await download(urls[0], admin, TENANT.acme, short);
      expect([csv.statusCode, parseCsv(csv.body).length]).toEqual([200, 51]);
      const wb = new ExcelJS.Workbook();
      await wb.xlsx.load((await download(urls[1], admin, TENANT.acme, short)).rawPayload as any);
      expect(wb.getWorksheet('Data')!.rowCount).toBe(52);
      expect(await stored()).toBe(store === 'directory' ? 4 : 2);
      await new Promise((r) => setTimeout(r, 2100));
      expect((await download(urls[0], admin, TENANT.acme, short)).statusCode).toBe(404);
      expect(await stored()).toBe(store === 'directory' ? 2 : 1);
      expect(await short.app.get<ExportStore>(EXPORT_STORE_TOKEN).purgeExpired()).toBe(
        store === 'directory' ? 1 : 1,
      );
      expect(await stored()).toBe(0);
    });

    it('should let a second instance on the same database (and export store) serve the download', async () => {
      const second = await createApp(short.config, { logger: false });
      try {
        await second.init();
        await second.getHttpAdapter().getInstance().ready();
        await second.get(StartupService).settled();
        const admin = (await signin(short.app, TENANT.acme, 'admin@acme.test')).token;
        const made = await short.app.inject({
          method: 'POST',
          url: '/api/v1/dataviews/customers_grid/export',
          headers: authHeaders(TENANT.acme, admin),
          payload: { format: 'csv' },
        });
        expect(made.statusCode).toBe(200);
        const url = made.json().data.downloadUrl as string;
        const here = await download(url, admin, TENANT.acme, short);
        const there = await second.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, admin) });
        expect(there.statusCode).toBe(200);
        expect(there.body).toBe(here.body);
        expect(parseCsv(there.body)).toHaveLength(51);
      } finally {
        second.get(StartupService).stop();
        await second.close();
      }
    });
  });
});
