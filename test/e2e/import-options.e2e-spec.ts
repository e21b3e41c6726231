import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { EXPORT_STORE, type ExportStore } from '../../src/dataview/download/export-store';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, type TestApp, waitFor } from '../support/test-app';
import { inline, workbook, zipOf } from '../support/xlsx-bombs';

type Json = Record<string, any>;
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

/**
 * The options of an import and its body's type (issue 34 #6, #14): form fields of a multipart
 * body are options as query parameters are, wherever they stand — a `dryRun=true` after a file of
 * several MB used to race the file (half the uploads wrote their rows) — and a body of another type
 * is 415 naming the accepted ones.
 */
describe('Import options as form fields, before or after the file, and the body type (issue 34 #6, #14)', () => {
  let t: TestApp;
  let ds: DataSource;
  let base = '';
  let token = '';
  let globex = '';

  beforeAll(async () => {
    t = await startTestApp({ label: 'import-options' });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await t?.close();
  });

  const send = async (
    parts: Array<[string, string | Blob]>,
    query = '',
    auth = authHeaders(TENANT.acme, token),
  ): Promise<{ status: number; body: Json }> => {
    const form = new FormData();
    for (const [name, value] of parts)
      if (typeof value === 'string') form.append(name, value);
      else form.append(name, value, value.type === XLSX ? 'customers.xlsx' : 'customers.csv');
    const res = await fetch(`${base}/api/v1/customers/imports${query}`, {
      method: 'POST',
      headers: auth,
      body: form,
    });
    return { status: res.status, body: (await res.json()) as Json };
  };

  async function finished(id: string, auth = authHeaders(TENANT.acme, token)): Promise<Json> {
    let data: Json = {};
    await waitFor(async () => {
      const res = await fetch(`${base}/api/v1/imports/${encodeURIComponent(id)}`, { headers: auth });
      data = ((await res.json()) as Json).data as Json;
      return !['PENDING', 'RUNNING'].includes(String(data.status));
    }, 120_000);
    return data;
  }

  async function named(prefix: string): Promise<number> {
    const rows = await ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from('demo_customers', 'c')
      .where('c.cus_name LIKE :p', { p: `${prefix}%` })
      .getRawOne<{ n: unknown }>();
    return Number(rows?.n);
  }

  async function importJobs(): Promise<number> {
    const rows = await ds.query<Json[]>(
      `SELECT COUNT(*) AS n FROM app_jobs WHERE job_kind = 'entity.import' AND job_tenant_id = 1`,
    );
    return Number(rows[0].n);
  }

  /**
   * A workbook of 3 new customers named `prefix …` that weighs `mb` MB: a picture of random bytes
   * beside the sheet (read past quickly by the job, as large on the wire as any file).
   */
  async function workbookOf(prefix: string, mb: number): Promise<Blob> {
    const rows = [0, 1, 2].map(
      (i) =>
        `<row r="${i + 2}">${inline(`A${i + 2}`, `${prefix} ${i}`)}${inline(`B${i + 2}`, `${prefix.toLowerCase()}-${i}@acme.example`)}</row>`,
    );
    const zip = await zipOf(
      workbook([`<row r="1">${inline('A1', 'name')}${inline('B1', 'email')}</row>`, ...rows], undefined, [
        ['xl/media/image1.png', randomBytes(mb * 1024 * 1024)],
      ]),
    );
    return new Blob([zip], { type: XLSX });
  }

  it('should honour dryRun=true sent after a 4 MB file, every time of 20 (5 at once), writing no row', async () => {
    const prefix = `Opt${Date.now()}`;
    const file = await workbookOf(prefix, 4);
    expect(file.size).toBeGreaterThan(4 * 1024 * 1024);
    const answers: Array<{ status: number; body: Json }> = [];
    for (let round = 0; round < 4; round++)
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 5 }, () =>
            send(
              [
                ['file', file],
                ['dryRun', 'true'],
              ],
              '?onError=skip',
            ),
          ),
        )),
      );
    expect(answers.map((a): unknown[] => [a.status, a.body.data?.dryRun])).toEqual(
      answers.map(() => [202, true]),
    );
    for (const a of answers) {
      const job = await finished(String(a.body.data.importId));
      expect(job).toMatchObject({ status: 'COMPLETED', dryRun: true, onError: 'skip', created: 3, total: 3 });
    }
    expect(await named(prefix)).toBe(0);
  });

  it('should read every option as a form field, before or after the file, as a query parameter', async () => {
    const prefix = `OptB${Date.now()}`;
    const csv = () => new Blob([`Full Name,email\n${prefix} A,${prefix.toLowerCase()}-a@acme.example\n`]);
    const mapping = JSON.stringify({ 'Full Name': 'name' });
    const before = await send([
      ['mode', 'create'],
      ['mapping', mapping],
      ['file', csv()],
      ['onError', 'skip'],
    ]);
    expect(before.status).toBe(202);
    expect(before.body.data).toMatchObject({ dryRun: false, mode: 'create', onError: 'skip' });
    expect(await finished(String(before.body.data.importId))).toMatchObject({
      status: 'COMPLETED',
      created: 1,
    });
    // upsert by email (form fields after the file): the row updates the record just created.
    const upsert = await send([
      ['file', csv()],
      ['mode', 'upsert'],
      ['key', 'email'],
      ['mapping', mapping],
    ]);
    expect(upsert.body.data).toMatchObject({ mode: 'upsert', onError: 'abort' });
    expect(await finished(String(upsert.body.data.importId))).toMatchObject({
      status: 'COMPLETED',
      updated: 1,
    });
    // The same value both ways is one option; two different values are refused.
    const same = await send(
      [
        ['file', csv()],
        ['dryRun', 'true'],
      ],
      '?dryRun=true',
    );
    expect([same.status, same.body.data?.dryRun]).toEqual([202, true]);
    // A dry run of the row again: it would fail on the e-mail address now taken, and writes nothing.
    expect(await finished(String(same.body.data.importId))).toMatchObject({ status: 'COMPLETED', failed: 1 });
    expect(await named(prefix)).toBe(1);
  });

  it('should refuse bad or conflicting form fields with 400 after the file, keeping nothing', async () => {
    const prefix = `OptC${Date.now()}`;
    const csv = () => new Blob([`name,email\n${prefix} A,${prefix.toLowerCase()}-a@acme.example\n`]);
    const cases: Array<[string, Array<[string, string | Blob]>, string, string]> = [
      [
        'conflict',
        [
          ['file', csv()],
          ['dryRun', 'false'],
        ],
        '?dryRun=true',
        'dryRun',
      ],
      [
        'unknown field',
        [
          ['file', csv()],
          ['other', 'x'],
        ],
        '',
        'other',
      ],
      [
        'twice',
        [
          ['dryRun', 'true'],
          ['file', csv()],
          ['dryRun', 'true'],
        ],
        '',
        'dryRun',
      ],
      [
        'bad value',
        [
          ['file', csv()],
          ['onError', 'maybe'],
        ],
        '',
        'onError',
      ],
      [
        'upsert without key',
        [
          ['file', csv()],
          ['mode', 'upsert'],
        ],
        '',
        'key',
      ],
      [
        'upsert by a field that is not unique',
        [
          ['file', csv()],
          ['mode', 'upsert'],
          ['key', 'tier'],
        ],
        '',
        'key',
      ],
      [
        'a second file',
        [
          ['file', csv()],
          ['file', csv()],
        ],
        '',
        'file',
      ],
      ['no file', [['dryRun', 'true']], '', 'file'],
    ];
    const store = t.app.get<ExportStore>(EXPORT_STORE);
    const filesBefore = (await store.usage('1')).files;
    const jobsBefore = await importJobs();
    for (const [label, parts, query, field] of cases) {
      const res = await send(parts, query);
      expect([label, res.status, res.body.error?.code, res.body.error?.details?.[0]?.field]).toEqual([
        label,
        400,
        'VALIDATION_ERROR',
        field,
      ]);
    }
    expect(await named(prefix)).toBe(0);
    expect(await importJobs()).toBe(jobsBefore);
    expect((await store.usage('1')).files).toBe(filesBefore);
  });

  it('should keep the options and the job of an import to its tenant', async () => {
    const prefix = `OptD${Date.now()}`;
    const res = await send(
      [
        ['file', new Blob([`name,email\n${prefix} A,${prefix.toLowerCase()}-a@globex.example\n`])],
        ['dryRun', 'true'],
      ],
      '',
      authHeaders(TENANT.globex, globex),
    );
    expect([res.status, res.body.data.dryRun]).toEqual([202, true]);
    const id = String(res.body.data.importId);
    expect(await finished(id, authHeaders(TENANT.globex, globex))).toMatchObject({ status: 'COMPLETED' });
    const other = await fetch(`${base}/api/v1/imports/${encodeURIComponent(id)}`, {
      headers: authHeaders(TENANT.acme, token),
    });
    expect(other.status).toBe(404);
    // A globex token on acme's tenant header starts nothing.
    const crossed = await send(
      [
        ['file', new Blob(['name\nx\n'])],
        ['dryRun', 'true'],
      ],
      '',
      authHeaders(TENANT.acme, globex),
    );
    expect(crossed.status).toBeGreaterThanOrEqual(400);
    expect(crossed.status).toBeLessThan(500);
  });

  it('should answer 415 naming the accepted types for a JSON or text body', async () => {
    for (const [type, body] of [
      ['application/json', '{"file":"name\\nx\\n"}'],
      ['text/plain', 'name\nx\n'],
    ]) {
      const res = await fetch(`${base}/api/v1/customers/imports`, {
        method: 'POST',
        headers: { ...authHeaders(TENANT.acme, token), 'content-type': type },
        body,
      });
      const json = (await res.json()) as Json;
      expect([type, res.status, json.error.code]).toEqual([type, 415, 'UNSUPPORTED_MEDIA_TYPE']);
      // JSON reaches the route, which names what it takes; other types are refused before it.
      if (type === 'application/json')
        expect(json.error.message).toMatch(/multipart\/form-data.*text\/csv.*spreadsheetml\.sheet/);
    }
  });
});
