import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

/**
 * The workflow walk-through of docs/workflows.md (issue 12 "Done when"): `customer_onboarding` runs to
 * COMPLETED for a silver customer; for a gold one it waits for an approval, which another admin
 * gives, and then completes; the customer's internal notes are written once.
 */
describe('customer_onboarding (issue 12)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};

  const call = (method: 'GET' | 'POST', url: string, who = 'admin', payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(TENANT.acme, token[who]),
      ...(payload === undefined ? {} : { payload: payload as Rec }),
    });
  const instance = async (id: number): Promise<Rec> =>
    (await call('GET', `/api/v1/workflows/instances/${id}`)).json<Rec>().data as Rec;
  const settled = async (id: number, status: string | ((i: Rec) => boolean)) => {
    await waitFor(
      async () => {
        const i = await instance(id);
        return typeof status === 'string' ? i.status === status : status(i);
      },
      20000,
      50,
    );
    return instance(id);
  };
  const notes = async (id: number): Promise<unknown> => {
    const [row]: Rec[] = await ds.query(
      `SELECT cus_internal_notes AS n FROM demo_customers WHERE cus_id = ${id}`,
    );
    return row?.n as unknown;
  };

  beforeAll(async () => {
    t = await startTestApp({ label: 'workflow-demo', env: { WORKFLOW_POLL_MS: '50' } });
    ds = t.app.get(DatabaseService).dataSource;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should list the workflow with its versions', async () => {
    const res = await call('GET', '/api/v1/workflows');
    expect(res.statusCode).toBe(200);
    const list = res.json().data as Rec[];
    expect(list.filter((w) => w.code === 'customer_onboarding').map((w): unknown => w.version)).toEqual([
      1, 2,
    ]);
    expect(list[0]).toEqual(
      expect.objectContaining({
        id: expect.any(Number),
        code: 'customer_onboarding',
        name: 'Customer onboarding',
        status: 'active',
      }),
    );
  });

  it('should run to COMPLETED for a silver customer, writing the note once', async () => {
    const res = await call('POST', '/api/v1/workflows/customer_onboarding/start', 'admin', {
      input: { customerId: 2, tier: 'silver' },
    });
    expect(res.statusCode).toBe(202);
    const started = res.json().data;
    expect(started).toMatchObject({ status: 'PENDING', workflowCode: 'customer_onboarding', version: 2 });
    expect(started.instanceId).toBe(started.id);
    const done = await settled(started.id, 'COMPLETED');
    expect((done.nodes as Rec[]).map((n): unknown[] => [n.nodeId, n.status])).toEqual([
      ['start', 'COMPLETED'],
      ['prepare', 'COMPLETED'],
      ['check_tier', 'COMPLETED'],
      ['update_customer', 'COMPLETED'],
      ['done', 'COMPLETED'],
    ]);
    expect(await notes(2)).toBe('Onboarded by workflow customer_onboarding v2');
    const logs = (await call('GET', `/api/v1/workflows/instances/${started.id}/logs`)).json().data as Rec[];
    expect(logs.map((l): unknown => l.message)).toEqual(
      expect.arrayContaining([
        'Onboarding customer 2 (silver), v2',
        'Customer 2 onboarded (v2)',
        'Workflow completed',
      ]),
    );
  });

  it('should wait for approval for a gold customer; the starter may not approve; another admin does', async () => {
    const res = await call('POST', '/api/v1/workflows/customer_onboarding/start', 'admin', {
      input: { customerId: 3, tier: 'gold' },
      version: 1,
    });
    expect(res.statusCode).toBe(202);
    const id = res.json().data.id as number;
    const waiting = await settled(id, (i) => i.waitingFor !== null);
    expect(waiting).toMatchObject({ status: 'RUNNING', currentNode: 'approve_gold', version: 1 });
    expect(waiting.waitingFor).toMatchObject({
      type: 'approval',
      step: 'approve_gold',
      message: 'Approve onboarding of gold customer 3',
    });

    const self = await call('POST', `/api/v1/workflows/instances/${id}/approve`, 'admin', { comment: 'me' });
    expect(self.statusCode).toBe(403);
    expect(self.json().error.code).toBe('FORBIDDEN');

    const ok = await call('POST', `/api/v1/workflows/instances/${id}/approve`, 'root', {
      comment: 'Looks good',
    });
    expect(ok.statusCode).toBe(200);
    const done = await settled(id, 'COMPLETED');
    const approval = (done.nodes as Rec[]).find((n) => n.nodeId === 'approve_gold');
    expect(approval?.output).toMatchObject({
      decision: 'approved',
      comment: 'Looks good',
      approver: { email: 'root@acme.test' },
    });
    expect(await notes(3)).toBe('Onboarded by workflow customer_onboarding v1');

    const again = await call('POST', `/api/v1/workflows/instances/${id}/approve`, 'root');
    expect(again.statusCode).toBe(409);
    expect(again.json().error.details).toMatchObject({ status: 'COMPLETED' });
  });

  it('should expose queue depth, step latency and step outcomes by step type on /metrics', async () => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).toMatch(/^workflow_queue_depth\{status="ready"\} \d+$/m);
    expect(text).toMatch(/^workflow_steps_total\{type="entity\.update",outcome="completed"\} [1-9]\d*$/m);
    expect(text).toMatch(/^workflow_steps_total\{type="approval",outcome="waiting"\} [1-9]\d*$/m);
    expect(text).toMatch(
      /^workflow_step_duration_seconds_count\{type="log",outcome="completed"\} [1-9]\d*$/m,
    );
    expect(text).toContain('# TYPE workflow_step_retries_total counter');
  });
});
