import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseService } from '../../src/database/database.service';
import { toDbTimestamp } from '../../src/database/dialect/timestamps';
import { startSmtpServer, TestSmtpServer } from '../support/smtp';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { ContractRecorder, installContractHook } from '../support/contract/contract-recorder';
import {
  FAULT,
  installFault,
  openDemoProfiles,
  rawGet,
  registerUnservableEntity,
  send,
  UNREACHABLE,
} from '../support/contract/contract-walk';
import { freePort } from '../support/redis-server';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Headers = Record<string, string>;

/**
 * The contract check (issue 20): every operation of the served OpenAPI document is called and made
 * to answer each of its documented statuses, and every answer is checked against the document,
 * request and response side (test/support/contract). Fails on any violation, on an operation
 * never called, and on a documented status never answered unless UNREACHABLE says why.
 * Three apps: the main one (a fault hook answers 500 where `x-contract-fault` is sent), one with
 * a rate limit of 1 and metrics off (429, metrics 404), and one whose cache never comes up (503).
 */

describe('OpenAPI contract: every operation, every documented status', () => {
  let smtp: TestSmtpServer;
  let main: TestApp;
  let limited: TestApp;
  let gated: TestApp;
  let jobs: TestApp;
  let recorders: ContractRecorder[] = [];
  const ids: Record<string, number> = {};
  let token = '';
  let rootToken = '';
  let limitedToken = '';
  let fileId = '';
  let base: Headers;

  /** A path of the document with its parameters filled from the fixtures. */
  const urlOf = (path: string): string => {
    const url = path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (name === 'entity_code') return 'customers';
      if (name === 'dvc_code') return 'customers_grid';
      if (name === 'actionId') return 'make_silver';
      if (name === 'file_id') return fileId;
      if (path.startsWith('/api/v1/webhooks/'))
        return name === 'code' ? 'contract_hook' : String(ids.delivery);
      if (name === 'version') return '1';
      if (name === 'code') {
        if (path.includes('/config/pages/')) return 'customer_form';
        if (path.includes('/config/navigation/')) return 'main';
        if (path.includes('/config/value-sets/')) return 'customer_tiers';
        return 'customer_onboarding';
      }
      if (path.startsWith('/api/v1/workflows/instances')) return String(ids.instance);
      for (const e of ['orders', 'users', 'roles'])
        if (path.startsWith(`/api/v1/${e}/`)) return String(ids[e]);
      return String(ids.customers);
    });
    return path === '/api/v1/records' ? `${url}?entity=customers` : url;
  };

  beforeAll(async () => {
    const exportDir = mkdtempSync(join(tmpdir(), 'contract-exports-'));
    // No limits but the ones a status needs, and no load shedding on a busy machine.
    const quiet = {
      ADDRESS_FAILURE_POINTS: '100000',
      PUBLIC_RATE_LIMIT_POINTS: '100000',
      RATE_LIMIT_POINTS: '100000',
      OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
      OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
    };
    smtp = await startSmtpServer();
    main = await startTestApp({
      label: 'contract',
      contract: true,
      env: {
        ...quiet,
        SMTP_URL: smtp.url,
        MAIL_FROM: 'sign-up@example.test',
        PUBLIC_URL: 'https://app.example.test',
        EXPORT_DIR: exportDir,
        WORKFLOW_POLL_MS: '50',
        // Deliveries stay as the walk leaves them (no receiver is reached from here).
        WEBHOOK_WORKER: 'off',
      },
      beforeInit: installFault,
    });
    limited = await startTestApp({
      label: 'contract_limited',
      contract: true,
      // One request per hour: every request after the first of each kind answers 429, however slow
      // the walk runs (a 10 s window could reset between two requests of one operation).
      env: {
        ...quiet,
        RATE_LIMIT_POINTS: '1',
        RATE_LIMIT_WINDOW_S: '3600',
        PUBLIC_RATE_LIMIT_POINTS: '1',
        PUBLIC_RATE_LIMIT_WINDOW_S: '3600',
        METRICS_ENABLED: 'false',
        EXPORT_DIR: exportDir,
      },
    });
    // Exports as jobs no worker runs: the route answers 202 once its short wait is over, and a job
    // cancelled while its request waits makes that request a 409.
    jobs = await startTestApp({
      label: 'contract_jobs',
      contract: true,
      env: { ...quiet, EXPORT_DIR: exportDir, JOB_WORKER: 'off', EXPORT_WAIT_MS: '300' },
    });
    const closed = await freePort();
    const gateRecorder = new ContractRecorder();
    gated = await startTestApp({
      label: 'contract_gated',
      contract: false,
      waitForStartup: false,
      env: {
        CACHE_URL: `redis://127.0.0.1:${closed}`,
        CACHE_STARTUP_MAX_ATTEMPTS: '1000',
        CACHE_STARTUP_RETRY_MS: '100',
      },
      beforeInit: (app) => installContractHook(app.getHttpAdapter().getInstance(), gateRecorder),
    });
    // Its own /api-docs/json waits behind the readiness gate: the main app serves the same document.
    await gateRecorder.attach(main.app.getHttpAdapter().getInstance());
    recorders = [main.contract!, limited.contract!, jobs.contract!, gateRecorder];
    // Its public budget is one request: the sign-in spends it, every later public request is a 429.
    limitedToken = (await signin(limited.app, TENANT.acme, 'admin@acme.test')).token;
    // Its authenticated budget is one request too: spent here, so that every request of the walk is
    // a 429 whatever operation comes first in the document.
    await send(limited, 'GET', '/api/v1/auth/profile', authHeaders(TENANT.acme, limitedToken));
    token = (await signin(main.app, TENANT.acme, 'admin@acme.test')).token;
    rootToken = (await signin(main.app, TENANT.acme, 'root@acme.test')).token;
    base = authHeaders(TENANT.acme, token);
    for (const e of ['customers', 'orders', 'users', 'roles']) {
      const list = await send(main, 'GET', `/api/v1/${e}?limit=1&sortBy=id`, base);
      if (!list.json.data) throw new Error(`${e}: ${list.status} ${JSON.stringify(list.json)}`);
      ids[e] = list.json.data.records[0].id;
    }
  }, 120_000);

  afterAll(async () => {
    await jobs?.close();
    await gated?.close();
    await limited?.close();
    await main?.close();
    await smtp?.close();
  });

  it('should answer the success statuses of every operation as documented', async () => {
    const admin = base;
    const root = authHeaders(TENANT.acme, rootToken);
    // Reads and lists, each with what it answers.
    for (const path of [
      '/api/v1/customers',
      '/api/v1/orders',
      '/api/v1/users',
      '/api/v1/roles',
      '/api/v1/records',
    ])
      expect((await send(main, 'GET', urlOf(path), admin)).status).toBe(200);
    expect((await send(main, 'GET', '/api/entity/customers/get?ten_id=1', admin)).status).toBe(200);
    for (const e of ['customers', 'orders', 'users', 'roles']) {
      const got = await send(main, 'GET', `/api/v1/${e}/${ids[e]}`, admin);
      expect(got.status).toBe(200);
      const again = await send(main, 'GET', `/api/v1/${e}/${ids[e]}`, {
        ...admin,
        'if-none-match': got.headers.etag,
      });
      expect(again.status).toBe(304);
    }
    for (const path of [
      '/api/v1/dataviews/{dvc_code}/config',
      '/api/v1/config/pages/{code}',
      '/api/v1/config/navigation/{code}',
      '/api/v1/config/value-sets/{code}',
    ]) {
      const got = await send(main, 'GET', urlOf(path), admin);
      expect(got.status).toBe(200);
      expect(
        (await send(main, 'GET', urlOf(path), { ...admin, 'if-none-match': got.headers.etag })).status,
      ).toBe(304);
    }
    expect((await send(main, 'GET', '/api/v1/dataviews/customers_grid/data?pageSize=3', admin)).status).toBe(
      200,
    );
    expect(
      (await send(main, 'GET', '/api/v1/dataviews/customers_grid/data?groupBy=tier', admin)).status,
    ).toBe(200);
    expect((await send(main, 'GET', '/api/v1/dataviews/orders_grid/data?pageSize=2', admin)).status).toBe(
      200,
    );
    // D55: a change-stream ticket (the streams themselves are UNREACHABLE here, see contract-walk).
    expect((await send(main, 'POST', '/api/v1/changes/tickets', admin)).status).toBe(201);
    const exported = await send(main, 'POST', '/api/v1/dataviews/customers_grid/export', admin, {
      format: 'csv',
    });
    expect(exported.status).toBe(200);
    fileId = String(exported.json.data.downloadUrl).split('/').pop()!;
    expect((await send(main, 'GET', urlOf('/api/v1/downloads/{file_id}'), admin)).status).toBe(200);

    // Writes: create, save (If-Match and body token), stale save, delete, delete with dependents.
    const created = await send(main, 'POST', '/api/v1/customers', admin, {
      name: 'Contract Test',
      email: 'contract@acme.example',
      tier: 'gold',
      credit_limit: '1500',
    });
    expect(created.status).toBe(201);
    const c = created.json.data;
    expect(
      (await send(main, 'POST', '/api/v1/customers', admin, { name: 'Twin', email: 'contract@acme.example' }))
        .status,
    ).toBe(400);
    const saved = await send(
      main,
      'PUT',
      `/api/v1/customers/${c.id}`,
      { ...admin, 'if-match': `"${c.lastModified}"` },
      { credit_limit: 1600 },
    );
    expect(saved.status).toBe(200);
    // Bulk (D51): a result per row (200), all-or-none with a stale row (409).
    const bulkSaved = await send(main, 'POST', '/api/v1/customers/bulk', admin, {
      operation: 'update',
      records: [
        { id: c.id, lastModified: saved.json.data.lastModified, credit_limit: 1650 },
        { id: c.id + 100000, lastModified: c.lastModified, tier: 'gold' },
      ],
    });
    expect(bulkSaved.status).toBe(200);
    expect(
      (
        await send(main, 'POST', '/api/v1/customers/bulk', admin, {
          operation: 'update',
          allOrNone: true,
          records: [{ id: c.id, lastModified: c.lastModified, credit_limit: 1 }],
        })
      ).status,
    ).toBe(409);
    expect(
      (await send(main, 'PUT', `/api/v1/customers/${c.id}`, admin, { ...c, credit_limit: 1 })).status,
    ).toBe(409);
    expect((await send(main, 'DELETE', `/api/v1/customers/${ids.customers}`, admin)).status).toBe(409);
    const order = await send(main, 'POST', '/api/v1/orders', admin, {
      customer_id: c.id,
      amount: 10,
      status: 'new',
    });
    expect(order.status).toBe(201);
    const o = order.json.data;
    expect(
      (
        await send(main, 'PUT', `/api/v1/orders/${o.id}`, admin, {
          status: 'paid',
          lastModified: o.lastModified,
        })
      ).status,
    ).toBe(200);
    const staleOrder = { status: 'shipped', lastModified: o.lastModified };
    expect((await send(main, 'PUT', `/api/v1/orders/${o.id}`, admin, staleOrder)).status).toBe(409);
    // Inline editing (D52): a stale token (409), then the current one (200).
    const inlineUrl = `/api/v1/dataviews/orders_grid/rows/${o.id}`;
    expect((await send(main, 'PATCH', inlineUrl, admin, staleOrder)).status).toBe(409);
    const current = (await send(main, 'GET', `/api/v1/orders/${o.id}`, admin)).json.data;
    const edited = { status: 'shipped', lastModified: current.lastModified };
    expect((await send(main, 'PATCH', inlineUrl, admin, edited)).status).toBe(200);
    // A dataview action (D52): a result per row.
    const acted = await send(main, 'POST', '/api/v1/dataviews/customers_grid/actions/make_silver', admin, {
      ids: [c.id],
    });
    expect(acted.status).toBe(200);
    expect((await send(main, 'DELETE', `/api/v1/orders/${o.id}`, admin)).status).toBe(200);
    expect((await send(main, 'DELETE', `/api/v1/customers/${c.id}`, admin)).status).toBe(200);
    // History (D56): the list, a version, a restore (and a stale one), an undelete.
    expect((await send(main, 'GET', `/api/v1/customers/${c.id}/history?limit=2`, admin)).status).toBe(200);
    expect((await send(main, 'GET', `/api/v1/customers/${c.id}/history/1`, admin)).status).toBe(200);
    const back = await send(main, 'POST', `/api/v1/customers/${c.id}/restore`, admin, { undelete: true });
    expect(back.status).toBe(200);
    const restored = await send(main, 'POST', `/api/v1/customers/${c.id}/restore`, admin, {
      version: 1,
      lastModified: back.json.data.record.lastModified,
    });
    expect(restored.status).toBe(200);
    expect(
      (
        await send(main, 'POST', `/api/v1/customers/${c.id}/restore`, admin, {
          version: 1,
          lastModified: back.json.data.record.lastModified,
        })
      ).status,
    ).toBe(409);
    const user = await send(main, 'POST', '/api/v1/users', root, {
      email_id: 'contract.user@acme.test',
      first_name: 'C',
      role_id: 2,
      password: 'a-long-Passw0rd',
    });
    expect(user.status).toBe(201);
    const u = user.json.data;
    expect(
      (await send(main, 'POST', '/api/v1/users', root, { email_id: 'contract.user@acme.test' })).status,
    ).toBe(400);
    expect(
      (
        await send(main, 'PUT', `/api/v1/users/${u.id}`, root, {
          id: u.id,
          last_name: 'T',
          lastModified: u.lastModified,
        })
      ).status,
    ).toBe(200);
    const staleUser = { last_name: 'U', lastModified: u.lastModified };
    expect((await send(main, 'PUT', `/api/v1/users/${u.id}`, root, staleUser)).status).toBe(409);

    // Workflows: start, read, list, logs, and every state change, legal and not.
    expect((await send(main, 'GET', '/api/v1/workflows', admin)).status).toBe(200);
    const start = (tier: string) =>
      send(main, 'POST', '/api/v1/workflows/customer_onboarding/start', admin, {
        input: { customerId: ids.customers, tier },
      });
    const first = await start('gold');
    expect(first.status).toBe(202);
    ids.instance = first.json.data.instanceId;
    for (const path of [
      '/api/v1/workflows/instances',
      '/api/v1/workflows/instances/{id}',
      '/api/v1/workflows/instances/{id}/logs',
    ])
      expect((await send(main, 'GET', urlOf(path), admin)).status).toBe(200);
    const change = (id: number, action: string, who: Headers = admin) =>
      send(main, 'POST', `/api/v1/workflows/instances/${id}/${action}`, who, {});
    expect((await change(ids.instance, 'pause')).status).toBe(200);
    expect((await change(ids.instance, 'pause')).status).toBe(409);
    expect((await change(ids.instance, 'resume')).status).toBe(200);
    expect((await change(ids.instance, 'resume')).status).toBe(409);
    expect((await change(ids.instance, 'cancel')).status).toBe(200);
    expect((await change(ids.instance, 'cancel')).status).toBe(409);
    expect((await change(ids.instance, 'approve', root)).status).toBe(409);
    expect((await change(ids.instance, 'reject', root)).status).toBe(409);
    // A gold customer's instance waits for an approval another user gives (four-eyes, D49).
    for (const action of ['approve', 'reject']) {
      const id = (await start('gold')).json.data.instanceId as number;
      await waitFor(async () => {
        const got = await send(main, 'GET', `/api/v1/workflows/instances/${id}`, admin);
        return got.json.data?.waitingFor != null;
      });
      expect((await change(id, action, root)).status).toBe(200);
    }

    // Auth, cache and probes.
    expect(
      (await send(main, 'GET', '/api/v1/auth/tenant-config', { 'x-tenant-id': tenantHeader(TENANT.acme) }))
        .status,
    ).toBe(200);
    expect((await send(main, 'GET', '/api/v1/auth/profile', admin)).status).toBe(200);
    expect(
      (
        await send(
          main,
          'POST',
          '/api/v1/auth/signup-otp',
          { 'x-tenant-id': tenantHeader(TENANT.acme) },
          { email_id: 'someone.new@acme.test' },
        )
      ).status,
    ).toBe(200);
    // Sign-up: the code of the mail creates the account; an e-mail registered meanwhile is a 409.
    const tenantOnly = { 'x-tenant-id': tenantHeader(TENANT.acme) };
    const codeOf = async (email: string): Promise<string> => {
      expect(
        (await send(main, 'POST', '/api/v1/auth/signup-otp', tenantOnly, { email_id: email })).status,
      ).toBe(200);
      await waitFor(() => Promise.resolve(smtp.mailsTo(email).length > 0));
      return /^\s*(\d{6})\s*$/m.exec(smtp.mailsTo(email).at(-1)!.text)![1];
    };
    const account = (email: string, otp: string) =>
      send(main, 'POST', '/api/v1/auth/create-account', tenantOnly, {
        email_id: email,
        otp,
        password: 'a-long-Passw0rd',
      });
    expect((await account('someone.new@acme.test', '000000')).status).toBe(400);
    expect((await account('signed.up@acme.test', await codeOf('signed.up@acme.test'))).status).toBe(200);
    const meanwhile = await codeOf('meanwhile@acme.test');
    expect(
      (await send(main, 'POST', '/api/v1/users', root, { email_id: 'meanwhile@acme.test' })).status,
    ).toBe(201);
    expect((await account('meanwhile@acme.test', meanwhile)).status).toBe(409);
    expect((await send(main, 'GET', '/api/cache/catalog', admin)).status).toBe(200);
    expect((await send(main, 'POST', '/api/cache/reload', admin)).status).toBe(200);
    expect(
      (await send(main, 'POST', '/api/v1/admin/cache/clear', root, { scope: 'lists', tenantId: 1 })).status,
    ).toBe(200);
    // Webhooks (D54): create (the secret once), read, list, change, the delivery log and a retry.
    const hook = { url: 'https://hooks.example.test/contract', events: ['customers.*'] };
    expect(
      (await send(main, 'POST', '/api/v1/webhooks', admin, { code: 'contract_hook', ...hook })).status,
    ).toBe(201);
    expect(
      (await send(main, 'POST', '/api/v1/webhooks', admin, { code: 'contract_hook', ...hook })).status,
    ).toBe(409);
    expect((await send(main, 'GET', '/api/v1/webhooks', admin)).status).toBe(200);
    expect((await send(main, 'GET', '/api/v1/webhooks/contract_hook', admin)).status).toBe(200);
    expect(
      (
        await send(main, 'PUT', '/api/v1/webhooks/contract_hook', admin, {
          description: 'contract',
          rotateSecret: true,
        })
      ).status,
    ).toBe(200);
    const ds = main.app.get(DatabaseService).dataSource;
    const [hookRow] = await ds.query<Array<{ whk_id: unknown }>>(
      `SELECT whk_id FROM app_webhooks WHERE whk_code = 'contract_hook'`,
    );
    const stamp = toDbTimestamp(Date.now());
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_webhook_deliveries')
      .values({
        whd_uid: 'msg_contract000000000000000000000',
        whd_tenant_id: 1,
        whd_webhook_id: Number(hookRow.whk_id),
        whd_event_uid: 'evt_contract',
        whd_sequence: 1,
        whd_type: 'customers.updated',
        whd_entity_code: 'customers',
        whd_record_id: ids.customers,
        whd_payload: '{}',
        whd_status: 'DEAD',
        whd_attempts: 8,
        whd_last_status: 500,
        whd_last_response: 'no',
        whd_last_attempt_at: stamp,
        whd_occurred_at: stamp,
        whd_created_at: stamp,
      })
      .execute();
    const log = await send(main, 'GET', '/api/v1/webhooks/contract_hook/deliveries?status=DEAD', admin);
    expect(log.status).toBe(200);
    ids.delivery = log.json.data[0].id;
    expect(
      (await send(main, 'POST', urlOf('/api/v1/webhooks/{code}/deliveries/{id}/retry'), admin)).status,
    ).toBe(200);
    // A delivery being sent cannot be queued again meanwhile.
    await ds.query(
      `UPDATE app_webhook_deliveries SET whd_status = 'DELIVERING' WHERE whd_id = ${ids.delivery}`,
    );
    expect(
      (await send(main, 'POST', urlOf('/api/v1/webhooks/{code}/deliveries/{id}/retry'), admin)).status,
    ).toBe(409);
    expect(
      (await send(main, 'POST', '/api/v1/webhooks', admin, { code: 'contract_gone', ...hook })).status,
    ).toBe(201);
    expect((await send(main, 'DELETE', '/api/v1/webhooks/contract_gone', admin)).status).toBe(200);
    // The tenant lifecycle (D58): a throwaway tenant created, read and erased by the system administrator.
    const tenantMade = await send(main, 'POST', '/api/v1/admin/tenants', root, {
      code: 'contract_walk',
      name: 'Contract walk',
      template: 'acme',
    });
    expect(tenantMade.status).toBe(201);
    expect(
      (await send(main, 'POST', '/api/v1/admin/tenants', root, { code: 'acme', name: 'Twice' })).status,
    ).toBe(409);
    const madeId = String(tenantMade.json.data.tenantId);
    expect((await send(main, 'GET', `/api/v1/admin/tenants/${madeId}/usage`, root)).status).toBe(200);
    expect((await send(main, 'GET', '/api/v1/admin/keys', root)).status).toBe(200);
    const tenantExport = await send(main, 'POST', `/api/v1/admin/tenants/${madeId}/export`, root);
    expect(tenantExport.status).toBe(202);
    expect(
      (
        await send(
          main,
          'GET',
          `/api/v1/admin/tenants/${madeId}/export/${tenantExport.json.data.jobId}`,
          root,
        )
      ).status,
    ).toBe(200);
    expect(
      (await send(main, 'DELETE', `/api/v1/admin/tenants/${madeId}`, root, { confirm: 'contract_walk' }))
        .status,
    ).toBe(200);
    expect(
      (await send(main, 'DELETE', `/api/v1/admin/tenants/${TENANT.acme}`, root, { confirm: 'acme' })).status,
    ).toBe(409);
    for (const path of [
      '/healthz',
      '/readyz',
      '/livez',
      '/health',
      '/api/v1/health',
      '/health/db',
      '/health/redis',
      '/metrics',
    ])
      expect((await send(main, 'GET', path)).status).toBe(200);
    const spare = (await signin(main.app, TENANT.acme, 'viewer@acme.test')).token;
    expect((await send(main, 'POST', '/api/v1/auth/logout', authHeaders(TENANT.acme, spare))).status).toBe(
      200,
    );
    expect((await signin(main.app, TENANT.acme, 'admin@acme.test', 'wrong-password')).status).toBe(401);
  }, 120_000);

  it('should answer the export job statuses: 202 and its job, cancel, and 409 for a wait cut short', async () => {
    const admin = authHeaders(TENANT.acme, (await signin(jobs.app, TENANT.acme, 'admin@acme.test')).token);
    const exportCsv = () =>
      send(jobs, 'POST', '/api/v1/dataviews/customers_grid/export', admin, { format: 'csv' });
    const queued = await exportCsv();
    expect(queued.status).toBe(202);
    const jobId = queued.json.data.jobId as string;
    expect((await send(jobs, 'GET', `/api/v1/exports/${jobId}`, admin)).status).toBe(200);
    expect((await send(jobs, 'POST', `/api/v1/exports/${jobId}/cancel`, admin)).status).toBe(200);

    // A request still waiting for its job when the job is cancelled.
    const ds = jobs.app.get(DatabaseService).dataSource;
    const before = await ds.query<Array<{ id: number }>>('SELECT MAX(job_id) AS id FROM app_jobs');
    const waiting = send(jobs, 'POST', '/api/v1/dataviews/customers_grid/export', admin, { format: 'csv' });
    let next = '';
    await waitFor(
      async () => {
        const rows = await ds.query<Array<{ id: number; publicId: string }>>(
          'SELECT job_id AS id, job_public_id AS "publicId" FROM app_jobs ORDER BY job_id DESC',
        );
        next = rows[0]?.publicId ?? '';
        return Number(rows[0]?.id ?? 0) > Number(before[0]?.id ?? 0);
      },
      10_000,
      5,
    );
    await send(jobs, 'POST', `/api/v1/exports/${next}/cancel`, admin);
    const cut = await waiting;
    expect([cut.status, cut.json.error?.code]).toEqual([409, 'CONFLICT']);
  });

  it('should answer the import statuses: 202 and its job, its status, cancel (D53)', async () => {
    const admin = authHeaders(TENANT.acme, (await signin(jobs.app, TENANT.acme, 'admin@acme.test')).token);
    const queued = await send(
      jobs,
      'POST',
      '/api/v1/customers/imports?dryRun=true&onError=skip',
      { ...admin, 'content-type': 'text/csv' },
      'name,email,tier\nContract Import,contract-import@acme.example,silver\n',
    );
    expect(queued.status).toBe(202);
    const importId = queued.json.data.importId as string;
    expect((await send(jobs, 'GET', `/api/v1/imports/${importId}`, admin)).status).toBe(200);
    expect((await send(jobs, 'POST', `/api/v1/imports/${importId}/cancel`, admin)).status).toBe(200);
  });

  it('should answer the error statuses every operation documents', async () => {
    const ops = [...main.contract!.document.documented().keys()];
    for (const op of ops) {
      const [method, path] = main.contract!.document.describe(op).split(' ');
      const statuses = main.contract!.document.documented().get(op)!;
      const url = urlOf(path);
      const hasBody = !['GET', 'HEAD'].includes(method);
      const body = hasBody ? {} : undefined;
      const tenantOnly = { 'x-tenant-id': tenantHeader(TENANT.acme) };
      if (statuses.includes('400')) await send(main, method, url, { authorization: `Bearer ${token}` }, body);
      if (statuses.includes('401')) await send(main, method, url, tenantOnly, body);
      if (statuses.includes('403'))
        await send(main, method, url, { ...authHeaders(TENANT.globex, token) }, body).then(async (r) =>
          r.status === 403
            ? r
            : send(main, method, url, { 'x-tenant-id': tenantHeader(TENANT.initech) }, body),
        );
      if (statuses.includes('404'))
        await send(main, method, url, { ...base, 'x-tenant-id': tenantHeader(999) }, body);
      if (statuses.includes('413'))
        await send(
          main,
          method,
          url,
          { ...base, 'content-type': 'application/json' },
          JSON.stringify({ pad: 'x'.repeat(1_100_000) }),
        );
      if (statuses.includes('415'))
        await send(main, method, url, { ...base, 'content-type': 'text/plain' }, 'plain text');
      if (statuses.includes('500')) await send(main, method, url, { ...base, [FAULT]: '1' }, body);
      if (statuses.includes('429'))
        for (let i = 0; i < 2; i++)
          await send(limited, method, url, authHeaders(TENANT.acme, limitedToken), body);
      if (statuses.includes('503')) await send(gated, method, url, base, body);
    }
    await send(limited, 'GET', '/metrics');
  }, 300_000);

  it('should answer what other configurations answer: 501 (D26), roles and users writes under other profiles', async () => {
    const ds = main.app.get(DatabaseService).dataSource;
    const root = authHeaders(TENANT.acme, rootToken);
    await registerUnservableEntity(ds, 'mongo_customers', 'mongo_grid');
    await openDemoProfiles(ds);
    expect((await send(main, 'POST', '/api/v1/admin/cache/clear', root, { scope: 'all' })).status).toBe(200);
    expect((await send(main, 'POST', '/api/cache/reload', root)).status).toBe(200);

    const mongo = [
      ['GET', '/api/v1/mongo_customers'],
      ['GET', '/api/v1/records?entity=mongo_customers'],
      ['GET', '/api/entity/mongo_customers/get'],
      ['POST', '/api/v1/mongo_customers', { name: 'M', email: 'm@acme.example' }],
      ['GET', '/api/v1/mongo_customers/1'],
      ['PUT', '/api/v1/mongo_customers/1', { name: 'M', lastModified: null }],
      ['DELETE', '/api/v1/mongo_customers/1'],
      ['GET', '/api/v1/mongo_customers/1/history'],
      ['GET', '/api/v1/mongo_customers/1/history/1'],
      ['POST', '/api/v1/mongo_customers/1/restore', { undelete: true }],
      ['POST', '/api/v1/mongo_customers/bulk', { operation: 'delete', ids: [1] }],
      ['POST', '/api/v1/mongo_customers/imports', {}],
      ['GET', '/api/v1/dataviews/mongo_grid/data'],
      ['GET', '/api/v1/dataviews/mongo_grid/changes'],
      ['POST', '/api/v1/dataviews/mongo_grid/export', { format: 'csv' }],
      ['POST', '/api/v1/dataviews/mongo_grid/actions/make_silver', { ids: [1] }],
      ['PATCH', '/api/v1/dataviews/mongo_grid/rows/1', { lastModified: null, status: 'paid' }],
    ] as const;
    for (const [method, url, body] of mongo)
      expect([method, url, (await send(main, method, url, root, body)).status]).toEqual([method, url, 501]);

    const role = await send(main, 'POST', '/api/v1/roles', root, {
      code: 'CONTRACT',
      description: 'Contract test',
    });
    expect(role.status).toBe(201);
    const r = role.json.data;
    const renamed = { description: 'Renamed', lastModified: r.lastModified };
    expect((await send(main, 'PUT', `/api/v1/roles/${r.id}`, root, renamed)).status).toBe(200);
    expect((await send(main, 'PUT', `/api/v1/roles/${r.id}`, root, renamed)).status).toBe(409);
    expect((await send(main, 'DELETE', `/api/v1/roles/${r.id}`, root)).status).toBe(200);
    // A role that users hold is restricted (roles → users.role_id restrict).
    expect((await send(main, 'DELETE', `/api/v1/roles/${ids.roles}`, root)).status).toBe(409);
    const spare = await send(main, 'POST', '/api/v1/users', root, { email_id: 'spare.user@acme.test' });
    expect(spare.status).toBe(201);
    expect((await send(main, 'DELETE', `/api/v1/users/${spare.json.data.id}`, root)).status).toBe(200);
  });

  it('should answer 431 on the probes when the head is too large (Node, before any route)', async () => {
    await main.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (main.app.getHttpServer().address() as AddressInfo).port;
    for (const path of [
      '/healthz',
      '/readyz',
      '/livez',
      '/health',
      '/api/v1/health',
      '/health/db',
      '/health/redis',
      '/metrics',
    ]) {
      const answer = await rawGet(port, path, { 'x-padding': 'x'.repeat(40_000) });
      expect(answer.status).toBe(431);
      main.contract!.record({
        method: 'GET',
        url: path,
        requestHeaders: {},
        status: answer.status,
        responseHeaders: answer.headers,
        responseBody: answer.body,
      });
    }
  });

  it('should catch what the issue found: a bare array where the envelope is documented, an undocumented status, a refused-by-the-document body that was accepted', () => {
    const check = (
      status: number,
      body: unknown,
      extra: Partial<Parameters<ContractRecorder['record']>[0]> = {},
    ) =>
      main
        .contract!.document.check({
          method: 'GET',
          url: '/api/v1/workflows',
          requestHeaders: base,
          status,
          responseHeaders: { 'content-type': 'application/json', 'x-request-id': 'r' },
          responseBody: Buffer.from(JSON.stringify(body)),
          ...extra,
        })
        .violations.map((v) => `${v.side} ${v.message}`);
    expect(check(200, [{ id: 1, code: 'x' }])).toEqual([
      expect.stringMatching(/^response body: \/ must be object/),
    ]);
    expect(check(418, {})).toEqual([expect.stringMatching(/^response status 418 is not documented/)]);
    const accepted = check(
      201,
      { success: true, data: {}, meta: {} },
      {
        method: 'POST',
        url: '/api/v1/users',
        requestBody: { email_id: 'a@b.test', unknown_field: 1 },
        requestHeaders: { ...base, 'content-type': 'application/json' },
      },
    );
    expect(accepted).toEqual(
      expect.arrayContaining([expect.stringMatching(/^request accepted, but invalid by the document/)]),
    );
  });

  it('should have touched every operation and documented status, with no violation', async () => {
    await send(main, 'GET', '/health/db');
    await main.app.get(DatabaseService).dataSource.destroy();
    await new Promise((r) => setTimeout(r, 1100));
    await send(main, 'GET', '/health/db');
    await send(main, 'GET', '/health');
    const documented = main.contract!.document.documented();
    const touched = new Map<string, Set<string>>();
    for (const r of recorders)
      for (const [op, s] of r.touched) touched.set(op, new Set([...(touched.get(op) ?? []), ...s]));
    const untouched: string[] = [];
    let total = 0;
    for (const [op, statuses] of documented) {
      total += statuses.length;
      for (const s of statuses) if (!touched.get(op)?.has(s)) untouched.push(`${op} ${s}`);
    }
    const violations = recorders.flatMap((r) => r.violations);
    const opsTouched = [...documented.keys()].filter((op) => touched.get(op)?.size).length;
    process.stdout.write(
      `contract: ${opsTouched}/${documented.size} operations, ${total - untouched.length}/${total} documented statuses ` +
        `touched; ${recorders.reduce((n, r) => n + r.exchanges, 0)} answers checked, ${violations.length} violations\n`,
    );
    expect(
      recorders
        .map((r) => r.report())
        .filter(Boolean)
        .join('\n'),
    ).toBe('');
    expect(untouched.filter((u) => !(u in UNREACHABLE))).toEqual([]);
    // The list stays honest: only documented statuses, and none that the walk reaches after all.
    expect(Object.keys(UNREACHABLE).filter((u) => !untouched.includes(u))).toEqual([]);
    expect(opsTouched).toBe(documented.size);
  });
});
