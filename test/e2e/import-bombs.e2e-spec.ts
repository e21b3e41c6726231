import ExcelJS from 'exceljs';
import { readFileSync, writeFileSync } from 'node:fs';
import type { DataSource } from 'typeorm';
import { TENANT, tenantHeader } from '../support/auth';
import { ServiceCluster, type ServiceProcess } from '../support/service-cluster';
import { waitFor } from '../support/test-app';
import { migratedDataSource, testDialect } from '../support/test-database';
import { bombs } from '../support/xlsx-bombs';

type Json = Record<string, any>;

/**
 * Attack files against the XLSX import (issue 34 #1), uploaded to a service process of its own so
 * that a crash shows as the process exiting: a 206 KB workbook whose one cell inflated to 200 MB
 * killed the process (heap out of memory) 17 s after its 202. Each bomb must now fail its job on
 * the first attempt with a 400-style error naming `file` and the bound, the process answering all
 * along with its peak RSS bounded; the files that held up before (XXE, entity expansion, a far-off
 * cell, 16,384 columns, millions of empty rows) still do, and a normal workbook still imports.
 */
const dialect = testDialect();
const MB = 1024 * 1024;

jest.setTimeout(600_000);

/** A line of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
function procKb(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? NaN) * 1024;
}

describe(`Zip bombs and hostile workbooks sent to an import, one process on ${dialect} (issue 34 #1)`, () => {
  let cluster: ServiceCluster;
  let node: ServiceProcess;
  let ds: DataSource;
  const serial = Date.now();

  beforeAll(async () => {
    cluster = await ServiceCluster.start({
      label: 'import-bombs',
      dialect,
      size: 1,
      env: { JOB_POLL_MS: '100' },
    });
    node = cluster.node(0);
    ds = await migratedDataSource(cluster.db);
    await cluster.signin();
  });

  afterAll(async () => {
    await ds?.destroy();
    await cluster?.close();
  });

  async function upload(zip: Buffer): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([zip]), 'customers.xlsx');
    const res = await fetch(`${node.client.baseUrl}/api/v1/customers/imports?onError=skip`, {
      method: 'POST',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${node.client.token}` },
      body: form,
    });
    const body = (await res.json()) as Json;
    expect([res.status, body.error]).toEqual([202, undefined]);
    return String(body.data.importId);
  }

  async function finished(id: string): Promise<Json> {
    let data: Json = {};
    await waitFor(
      async () => {
        expect(node.running).toBe(true);
        const res = await node.client.get(`/api/v1/imports/${encodeURIComponent(id)}`);
        data = res.body.data as Json;
        return !['PENDING', 'RUNNING'].includes(String(data.status));
      },
      300_000,
      200,
    );
    return data;
  }

  async function customerNamed(name: string): Promise<number> {
    const rows = await ds.query<Json[]>(
      `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_name = '${name}' AND cus_tenant_id = 1`,
    );
    return Number(rows[0].n);
  }

  it('should fail each bomb on its first attempt, naming file and the bound, with the process up and its memory bounded', async () => {
    // The peak RSS from here on (Linux: writing 5 to clear_refs resets VmHWM).
    writeFileSync(`/proc/${node.pid}/clear_refs`, '5');
    const before = procKb(node.pid, 'VmRSS');
    const cases: Array<[string, () => Promise<Buffer>, RegExp]> = [
      [
        'inline string of 200 MB',
        bombs.inlineString,
        /sheet1\.xml has .* longer than \d+ bytes .*IMPORT_MAX_CELL_CHARS/,
      ],
      [
        'shared string of 200 MB',
        bombs.sharedString,
        /sharedStrings\.xml has .* longer than \d+ bytes .*IMPORT_MAX_CELL_CHARS/,
      ],
      ['100 MB of zeros', bombs.ratio, /image1\.png inflates more than 100 times .*IMPORT_MAX_ZIP_RATIO/],
      ['external entity (XXE)', bombs.xxe, /a DTD declaration/],
      ['entity expansion (billion laughs)', bombs.billionLaughs, /a DTD declaration/],
    ];
    for (const [label, make, bound] of cases) {
      const zip = await make();
      expect(zip.length).toBeLessThan(1 * MB);
      const job = await finished(await upload(zip));
      expect([label, job.status, job.error?.code, job.error?.details]).toEqual([
        label,
        'FAILED',
        'VALIDATION_ERROR',
        [{ field: 'file', error: expect.stringMatching(bound) }],
      ]);
    }
    expect(node.running).toBe(true);
    expect((await fetch(`${node.client.baseUrl}/readyz`)).status).toBe(200);
    const growth = procKb(node.pid, 'VmHWM') - before;
    expect(growth).toBeLessThan(150 * MB);
    // Failed at once, never claimed again (a crash would have left the job to a second attempt).
    const attempts = await ds.query<Json[]>(
      `SELECT job_attempts AS attempts FROM app_jobs WHERE job_kind = 'entity.import' AND job_tenant_id = 1`,
    );
    expect(attempts.map((r) => Number(r.attempts))).toEqual(cases.map(() => 1));
  });

  it('should import a workbook with a far-off cell or 16,384 columns, and fail one of 5,000,000 empty rows at once', async () => {
    writeFileSync(`/proc/${node.pid}/clear_refs`, '5');
    const before = procKb(node.pid, 'VmRSS');
    // The far-off cell's row is a row of its own, without the required fields: it fails, alone.
    const cases: Array<[string, (name: string, email: string) => Promise<Buffer>, Json]> = [
      ['a cell at XFD1048576', bombs.farCell, { status: 'COMPLETED', created: 1, failed: 1 }],
      ['16,384 columns', bombs.wideRow, { status: 'COMPLETED', created: 1, failed: 0 }],
      [
        '5,000,000 empty rows',
        (name, email) => bombs.emptyRows(name, email, 5_000_000),
        {
          status: 'FAILED',
          created: 0,
          error: expect.objectContaining({
            code: 'VALIDATION_ERROR',
            details: [
              { field: 'file', error: expect.stringMatching(/sheet1\.xml inflates more than 100 times/) },
            ],
          }),
        },
      ],
    ];
    for (const [i, [label, make, outcome]] of cases.entries()) {
      const name = `Bomb${serial} ${i}`;
      const job = await finished(await upload(await make(name, `bomb-${serial}-${i}@acme.example`)));
      expect([label, job]).toEqual([label, expect.objectContaining(outcome)]);
      expect([label, await customerNamed(name)]).toEqual([label, outcome.created]);
    }
    expect(node.running).toBe(true);
    expect(procKb(node.pid, 'VmHWM') - before).toBeLessThan(150 * MB);
  });

  it('should still import a normal workbook, as exceljs writes it', async () => {
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet('Customers');
    sheet.addRow(['name', 'email', 'tier']);
    for (let i = 0; i < 50; i++)
      sheet.addRow([`Normal${serial} ${i}`, `normal-${serial}-${i}@acme.example`, 'gold']);
    const job = await finished(await upload(Buffer.from(await wb.xlsx.writeBuffer())));
    expect(job).toMatchObject({ status: 'COMPLETED', total: 50, created: 50, failed: 0 });
    const rows = await ds.query<Json[]>(
      `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_name LIKE 'Normal${serial} %' AND cus_tenant_id = 1`,
    );
    expect(Number(rows[0].n)).toBe(50);
  });
});
