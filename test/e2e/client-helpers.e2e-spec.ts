import type { AddressInfo } from 'node:net';
import ExcelJS from 'exceljs';
import {
  ApiError,
  createApiClient,
  type ApiClient,
  type ChangeEvent,
  type components,
  type ImportJob,
  unwrap,
} from '../../client/src';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { DEMO_PASSWORD, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Customer = components['schemas']['Customer'];

/**
 * Issue 34 item 8: the typed client's helpers against the running service over HTTP — imports of
 * a CSV string (text/csv), of bytes (multipart) and of an XLSX workbook, dataview pages that keep
 * their pagination, groups, typed live rows — and a tenant's client that tries another's import.
 */
describe('typed client helpers (imports, dataview pages, live rows) against the service', () => {
  let t: TestApp;
  let baseUrl: string;
  let acme: ApiClient;
  let globex: ApiClient;

  beforeAll(async () => {
    t = await startTestApp({ label: 'client-helpers' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    acme = createApiClient({ baseUrl, tenantHeader: tenantHeader(TENANT.acme) });
    globex = createApiClient({ baseUrl, tenantHeader: tenantHeader(TENANT.globex) });
    await acme.signIn('admin@acme.test', DEMO_PASSWORD);
    await globex.signIn('admin@globex.test', DEMO_PASSWORD);
  });

  afterAll(async () => {
    await t?.close();
  });

  /** The acme customers whose e-mail ends with `suffix`, read through the client. */
  async function customersEndingWith(client: ApiClient, suffix: string): Promise<Customer[]> {
    const page = await client.dataviews.page<'customers'>('customers_grid', {
      filters: [{ fieldCode: 'email', operator: 'ends_with', value: suffix }],
      pageSize: 100,
    });
    return page.rows;
  }

  it('imports a CSV string as text/csv: every row is written (not one JSON-quoted header cell)', async () => {
    const csv =
      'name,email,tier\nCsv One,csv.one@string.example,gold\nCsv Two,csv.two@string.example,silver\n';
    const started = await acme.imports.upload('customers', csv, { onError: 'abort' });
    expect(started).toMatchObject({ entity: 'customers', status: 'PENDING' });
    const done: ImportJob = await acme.imports.wait(started.importId, { intervalMs: 25, timeoutMs: 30_000 });
    expect(done).toMatchObject({ status: 'COMPLETED', created: 2, failed: 0, ignoredColumns: [] });
    const rows = await customersEndingWith(acme, '@string.example');
    expect(rows.map((r) => [r.name, r.tier]).sort()).toEqual([
      ['Csv One', 'gold'],
      ['Csv Two', 'silver'],
    ]);
  });

  it('imports through api with a text/csv string body, as the document describes the route', async () => {
    const job = await unwrap(
      acme.api.POST('/api/v1/{entity_code}/imports', {
        params: { path: { entity_code: 'customers' } },
        body: 'name,email\nRaw Csv,raw.csv@api.example\n',
        headers: { 'content-type': 'text/csv' },
      }),
    );
    expect(await acme.imports.wait(job.importId, { intervalMs: 25 })).toMatchObject({
      status: 'COMPLETED',
      created: 1,
    });
  });

  it('imports bytes as multipart (a Buffer of CSV, an XLSX workbook) with the options and a mapping', async () => {
    const buffer = Buffer.from('Full name,Mail\nBuffer One,buffer.one@bytes.example\n');
    const fromBytes = await acme.imports.upload('customers', buffer, {
      mapping: { 'Full name': 'name', Mail: 'email' },
    });
    expect(await acme.imports.wait(fromBytes.importId, { intervalMs: 25 })).toMatchObject({
      status: 'COMPLETED',
      created: 1,
    });

    const workbook = new ExcelJS.Workbook();
    const sheet = workbook.addWorksheet('customers');
    sheet.addRow(['name', 'email']);
    sheet.addRow(['Sheet One', 'sheet.one@bytes.example']);
    const xlsx = new Uint8Array(await workbook.xlsx.writeBuffer());
    const dry = await acme.imports.upload('customers', xlsx, { dryRun: true });
    expect(await acme.imports.wait(dry.importId, { intervalMs: 25 })).toMatchObject({
      status: 'COMPLETED',
      dryRun: true,
      created: 1,
    });
    const real = await acme.imports.upload('customers', new Blob([xlsx]), { filename: 'people.xlsx' });
    expect(await acme.imports.wait(real.importId, { intervalMs: 25 })).toMatchObject({
      status: 'COMPLETED',
      created: 1,
    });
    expect((await customersEndingWith(acme, '@bytes.example')).map((r) => r.name).sort()).toEqual([
      'Buffer One',
      'Sheet One',
    ]);
  });

  it("another tenant's client cannot read, cancel or see an import, and imports into its own tenant only", async () => {
    const started = await acme.imports.upload(
      'customers',
      'name,email\nAcme Only,acme.only@tenant.example\n',
    );
    await acme.imports.wait(started.importId, { intervalMs: 25 });
    for (const call of [
      () => globex.imports.status(started.importId),
      () => globex.imports.cancel(started.importId),
    ]) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ApiError);
      expect(error).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    }
    const theirs = await globex.imports.upload(
      'customers',
      'name,email\nGlobex Only,globex.only@tenant.example\n',
    );
    expect(await globex.imports.wait(theirs.importId, { intervalMs: 25 })).toMatchObject({ created: 1 });
    expect((await customersEndingWith(acme, '@tenant.example')).map((r) => r.name)).toEqual(['Acme Only']);
    expect((await customersEndingWith(globex, '@tenant.example')).map((r) => r.name)).toEqual([
      'Globex Only',
    ]);
    const foreign = await acme.imports.status(theirs.importId).catch((e: unknown) => e);
    expect(foreign).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });

  it('reads a dataview page with its pagination and aggregates, its groups, and the rows of a group', async () => {
    const page = await acme.dataviews.page<'customers'>('customers_grid', {
      page: 0,
      pageSize: 5,
      sort: [{ fieldCode: 'credit_limit', direction: 'desc' }],
    });
    expect(page.rows).toHaveLength(5);
    expect(page.pagination).toMatchObject({ page: 0, pageSize: 5, total: expect.any(Number) });
    const limits = page.rows.map((r) => r.credit_limit ?? 0);
    expect([...limits].sort((a, b) => b - a)).toEqual(limits);
    expect(page.rows.every((r) => typeof r.lastModified === 'string')).toBe(true);

    const { groups } = await acme.dataviews.groups('customers_grid', 'tier');
    const gold = groups.find((g) => g.key === 'gold');
    expect(gold?.count).toBeGreaterThan(0);
    const golds = await acme.dataviews.page<'customers'>('customers_grid', {
      groupBy: 'tier',
      groupKey: 'gold',
      pageSize: 100,
    });
    expect(golds.rows.every((r) => r.tier === 'gold')).toBe(true);
    expect('total' in golds.pagination && golds.pagination.total).toBe(gold?.count);

    const cursorPage = await acme.dataviews.page('orders_grid', { pageSize: 2 });
    expect(cursorPage.rows).toHaveLength(2);
    expect('nextCursor' in cursorPage.pagination && typeof cursorPage.pagination.nextCursor).toBe('string');

    const refused = await acme.dataviews
      .page('customers_grid', { filters: [{ fieldCode: 'no_such_field', operator: 'equals', value: 1 }] })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
  });

  it('follows live changes with rows typed by the entity schema, and a dataview stream with grid rows', async () => {
    const live = t.app.get(LiveChangesService);
    const before = live.openStreams;
    const entityEvents: Array<ChangeEvent<Customer>> = [];
    const stop = new AbortController();
    const entity = (async () => {
      for await (const e of acme.changes('customers', { signal: stop.signal, initialDelayMs: 50 }))
        entityEvents.push(e);
    })();
    const grid = acme.dataviews.changes<'customers'>('customers_grid', {
      signal: stop.signal,
      initialDelayMs: 50,
    });
    const firstGridEvent = grid.next();
    await waitFor(async () => live.openStreams === before + 2, 10_000);

    const started = await acme.imports.upload(
      'customers',
      'name,email,tier\nLive Row,live.row@live.example,gold\n',
    );
    await acme.imports.wait(started.importId, { intervalMs: 25 });
    await waitFor(
      async () => entityEvents.some((e) => e.event === 'created' && e.data.row?.name === 'Live Row'),
      10_000,
    );
    const created = entityEvents.find((e) => e.event === 'created' && e.data.row?.name === 'Live Row');
    if (created === undefined || created.event === 'reset') throw new Error('no created event');
    const tier: Customer['tier'] = created.data.row?.tier;
    expect(tier).toBe('gold');

    const gridEvent = (await firstGridEvent).value as ChangeEvent<components['schemas']['Customer']>;
    expect(gridEvent).toMatchObject({ event: 'created', data: { row: { name: 'Live Row', tier: 'gold' } } });
    stop.abort();
    await entity;
    await grid.return(undefined);
  }, 60_000);
});
