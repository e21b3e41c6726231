import {
  ApiError,
  createApiClient,
  unwrap,
  XLSX_TYPE,
  type ChangeEvent,
  type components,
  type GridPagination,
  type GridRow,
  type ImportJob,
  type paths,
} from './index';

/**
 * Issue 34 item 8: the helpers for imports, dataview pages and live rows, on a fake service that
 * records what it was sent. The type checks are lines of this file: tsc --strict compiles it
 * (`npm run typecheck`, and ts-jest before it runs), an `@ts-expect-error` that no longer errs fails.
 */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

interface Sent {
  method: string;
  url: URL;
  contentType: string | null;
  text: string;
  form: FormData | null;
}

function service(answer: (sent: Sent) => { status?: number; body: unknown }) {
  const sent: Sent[] = [];
  const fetch = (async (...[input, init]: Parameters<typeof globalThis.fetch>) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const contentType = request.headers.get('content-type');
    const multipart = contentType?.startsWith('multipart/form-data') ?? false;
    const one: Sent = {
      method: request.method,
      url: new URL(request.url),
      contentType,
      text: multipart ? '' : await request.text(),
      form: multipart ? await request.formData() : null,
    };
    sent.push(one);
    const { status = 200, body } = answer(one);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  }) as typeof globalThis.fetch;
  return { client: createApiClient({ baseUrl: 'http://service.test', fetch, tenantHeader: 'hdr' }), sent };
}

const meta = { timestamp: '2026-11-28T00:00:00.000Z', requestId: 'req-1' };
const JOB = {
  importId: 'hV3kq0Zb9mT2xw7LcR1pAg',
  entity: 'customers',
  status: 'PENDING',
  dryRun: false,
  mode: 'create',
  onError: 'skip',
  total: null,
  processed: 0,
  created: 0,
  updated: 0,
  skipped: 0,
  failed: 0,
  errors: [],
  ignoredColumns: [],
  createdAt: '2026-11-28T00:00:00.000Z',
  statusUrl: '/api/v1/imports/7',
};
const CSV = 'name,email\nAda,ada@example.test\n';

describe('the typed client helpers (issue 34)', () => {
  describe('request bodies', () => {
    it('sends a text/csv string through api as the text itself, not as a JSON string', async () => {
      const { client, sent } = service(() => ({ status: 202, body: { success: true, data: JOB, meta } }));
      await client.api.POST('/api/v1/{entity_code}/imports', {
        params: { path: { entity_code: 'customers' } },
        body: CSV,
        headers: { 'content-type': 'text/csv' },
      });
      expect(sent[0].text).toBe(CSV);
      expect(sent[0].contentType).toBe('text/csv');
    });

    it('types the binary bodies as what fetch sends: a Blob, a multipart file part, bytes', async () => {
      const { client, sent } = service(() => ({ status: 202, body: { success: true, data: JOB, meta } }));
      const path = { params: { path: { entity_code: 'customers' } } } as const;
      await client.api.POST('/api/v1/{entity_code}/imports', {
        ...path,
        body: new Blob([CSV]),
        headers: { 'content-type': 'text/csv' },
      });
      await client.api.POST('/api/v1/{entity_code}/imports', {
        ...path,
        body: { file: new Blob([CSV], { type: 'text/csv' }) },
        bodySerializer: (body) => {
          const form = new FormData();
          if (typeof body === 'object' && 'file' in body) form.append('file', body.file, 'people.csv');
          return form;
        },
      });
      expect(sent[0].text).toBe(CSV);
      expect(await (sent[1].form?.get('file') as Blob).text()).toBe(CSV);
      const download: Equals<
        paths['/api/v1/downloads/{file_id}']['get']['responses'][200]['content']['text/csv'],
        Blob
      > = true;
      expect(download).toBe(true);
    });

    it('still sends an object as JSON', async () => {
      const { client, sent } = service(() => ({ body: { success: true, data: { id: 1 }, meta } }));
      await client.api.POST('/api/v1/{entity_code}', {
        params: { path: { entity_code: 'customers' } },
        body: { name: 'Ada', email: 'ada@example.test' } as never,
      });
      expect(sent[0].contentType).toBe('application/json');
      expect(JSON.parse(sent[0].text)).toEqual({ name: 'Ada', email: 'ada@example.test' });
    });
  });

  describe('imports.upload', () => {
    it('sends a CSV string as the text/csv body, with the options as query parameters', async () => {
      const { client, sent } = service(() => ({ status: 202, body: { success: true, data: JOB, meta } }));
      const job = await client.imports.upload('customers', CSV, {
        mode: 'upsert',
        key: 'email',
        dryRun: true,
        onError: 'abort',
        mapping: { 'E-mail': 'email', Notes: null },
      });
      expect(job.importId).toBe('hV3kq0Zb9mT2xw7LcR1pAg');
      const { url, text, contentType } = sent[0];
      expect(url.pathname).toBe('/api/v1/customers/imports');
      expect(contentType).toBe('text/csv; charset=utf-8');
      expect(text).toBe(CSV);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        mode: 'upsert',
        key: 'email',
        dryRun: 'true',
        onError: 'abort',
        mapping: JSON.stringify({ 'E-mail': 'email', Notes: null }),
      });
    });

    it('sends bytes as the multipart part `file`: a ZIP (XLSX) as a workbook, other bytes as CSV', async () => {
      const { client, sent } = service(() => ({ status: 202, body: { success: true, data: JOB, meta } }));
      const zip = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]);
      await client.imports.upload('customers', zip);
      await client.imports.upload('customers', new TextEncoder().encode(CSV), { filename: 'people.csv' });
      await client.imports.upload('customers', new Blob([CSV], { type: 'text/csv' }));

      const parts = sent.map((s) => s.form?.get('file'));
      expect(sent.every((s) => s.contentType?.startsWith('multipart/form-data; boundary='))).toBe(true);
      expect(parts.map((p) => (p instanceof Blob ? [p.type, p.name] : p))).toEqual([
        [XLSX_TYPE, 'import.xlsx'],
        ['text/csv', 'people.csv'],
        ['text/csv', 'import.csv'],
      ]);
      expect(sent.map((s) => [...(s.form?.keys() ?? [])])).toEqual([['file'], ['file'], ['file']]);
      expect(await (parts[1] as Blob).text()).toBe(CSV);
    });

    it('waits for the job to finish, and status, cancel and a refusal read as typed jobs and ApiErrors', async () => {
      let reads = 0;
      const { client, sent } = service(({ url, method }) => {
        if (url.pathname === '/api/v1/imports/NoSuchImportNoSuchImpo')
          return {
            status: 404,
            body: { success: false, error: { code: 'NOT_FOUND', message: 'gone' }, meta },
          };
        if (method === 'POST')
          return { body: { success: true, data: { ...JOB, status: 'CANCELLED' }, meta } };
        reads++;
        return {
          body: { success: true, data: { ...JOB, status: reads < 3 ? 'RUNNING' : 'COMPLETED' }, meta },
        };
      });
      const done: ImportJob = await client.imports.wait(JOB.importId, { intervalMs: 1 });
      expect([done.status, reads]).toEqual(['COMPLETED', 3]);
      expect((await client.imports.cancel(JOB.importId)).status).toBe('CANCELLED');
      expect(sent.at(-1)?.url.pathname).toBe(`/api/v1/imports/${JOB.importId}/cancel`);
      const missing = 'NoSuchImportNoSuchImpo';
      await expect(client.imports.status(missing)).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
      await expect(client.imports.status(missing)).rejects.toBeInstanceOf(ApiError);
    });

    it('types the file and the options from the document', () => {
      const { client } = service(() => ({ body: {} }));
      const status: Equals<
        ImportJob['status'],
        'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED'
      > = true;
      expect(status).toBe(true);
      // @ts-expect-error a number is no file
      void client.imports.upload('customers', 42).catch(() => undefined);
      // @ts-expect-error onError is abort or skip
      void client.imports.upload('customers', CSV, { onError: 'ignore' }).catch(() => undefined);
    });
  });

  describe('dataviews', () => {
    const ROWS = [
      { id: 1, name: 'Ada', tier: 'gold', credit_limit: 1000, lastModified: '2026-11-28T00:00:00.000Z' },
    ];
    const PAGE = {
      success: true,
      data: ROWS,
      pagination: { page: 0, pageSize: 1, total: 50 },
      aggregates: { credit_limit: 1000 },
      meta,
    };

    it('answers a page with its rows, its pagination and its aggregates together', async () => {
      const { client, sent } = service(() => ({ body: PAGE }));
      const page = await client.dataviews.page<'customers'>('customers_grid', {
        pageSize: 1,
        filters: [{ fieldCode: 'tier', operator: 'in', value: ['gold'] }],
        sort: [{ fieldCode: 'credit_limit', direction: 'desc' }],
        search: 'ada',
      });
      expect(page).toEqual({ rows: ROWS, pagination: PAGE.pagination, aggregates: PAGE.aggregates });
      expect(Object.fromEntries(sent[0].url.searchParams)).toEqual({
        pageSize: '1',
        filters: '[{"fieldCode":"tier","operator":"in","value":["gold"]}]',
        sort: '[{"fieldCode":"credit_limit","direction":"desc"}]',
        search: 'ada',
      });
      // Typed by the entity's schema: tier is the Customer's union, not unknown.
      const tier: 'bronze' | 'silver' | 'gold' | null | undefined = page.rows[0].tier;
      const token: string | null = page.rows[0].lastModified;
      const rowType: Equals<(typeof page.rows)[number], GridRow<'customers'>> = true;
      const customer: components['schemas']['Customer']['tier'] = page.rows[0].tier;
      expect([tier, token, rowType, customer]).toEqual(['gold', ROWS[0].lastModified, true, 'gold']);
      // @ts-expect-error credit_limit is a number
      const wrong: string = page.rows[0].credit_limit;
      void wrong;
      const pagination: GridPagination = page.pagination;
      expect('total' in pagination && pagination.total).toBe(50);
    });

    it('reads the groups, and the rows of one group with its key sent as a JSON scalar', async () => {
      const GROUPS = [
        { key: null, count: 2, aggregates: {} },
        { key: 'gold', count: 10, aggregates: {} },
      ];
      const { client, sent } = service(({ url }) =>
        url.searchParams.has('groupKey')
          ? { body: PAGE }
          : { body: { success: true, data: GROUPS, aggregates: {}, meta } },
      );
      const { groups } = await client.dataviews.groups('customers_grid', 'tier');
      expect(groups.map((g) => [g.key, g.count])).toEqual([
        [null, 2],
        ['gold', 10],
      ]);
      await client.dataviews.page('customers_grid', { groupBy: 'tier', groupKey: groups[0].key as null });
      await client.dataviews.page('customers_grid', { groupBy: 'tier', groupKey: 'gold' });
      expect(sent.map((s) => s.url.searchParams.get('groupKey'))).toEqual([null, 'null', '"gold"']);
      // @ts-expect-error a groupKey needs its groupBy
      void client.dataviews.page('customers_grid', { groupKey: 'gold' }).catch(() => undefined);
    });
  });

  describe('live rows', () => {
    it('types the rows of an entity stream with its schema, and reset events without one', () => {
      const { client } = service(() => ({ body: {} }));
      const stream = client.changes('customers');
      type Event = typeof stream extends AsyncGenerator<infer E> ? E : never;
      const typed: Equals<Event, ChangeEvent<components['schemas']['Customer']>> = true;
      expect(typed).toBe(true);
      const onEvent = (e: Event): string | null | undefined => {
        if (e.event === 'reset') return null;
        // @ts-expect-error a deleted event's row is null
        const name: string | undefined = e.data.row.name;
        void name;
        return e.data.row?.name;
      };
      expect(
        onEvent({
          id: '1',
          event: 'created',
          data: { id: 1, lastModified: null, row: { id: 1, name: 'Ada', lastModified: null } },
        }),
      ).toBe('Ada');
      const grid = client.dataviews.changes<'customers'>('customers_grid');
      type GridEvent = typeof grid extends AsyncGenerator<infer E> ? E : never;
      const gridTyped: Equals<GridEvent, ChangeEvent<GridRow<'customers'>>> = true;
      expect(gridTyped).toBe(true);
      void stream.return(undefined);
      void grid.return(undefined);
    });
  });

  it('keeps unwrap for the routes whose answer is data alone', async () => {
    const { client } = service(() => ({ body: { success: true, data: [{ id: 1, code: 'x' }], meta } }));
    const workflows = await unwrap(client.api.GET('/api/v1/workflows'));
    expect(workflows[0].code).toBe('x');
  });
});
