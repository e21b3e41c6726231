import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, tenantHeader, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;
type State = 'PENDING' | 'RUNNING' | 'PAUSED' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
type Action = 'pause' | 'resume' | 'cancel' | 'approve' | 'reject';
type Who = 'admin' | 'viewer' | 'root' | 'globex';

const BASE = '/api/v1/workflows';
const ACTIONS: readonly Action[] = ['pause', 'resume', 'cancel', 'approve', 'reject'];
/** A delay no test waits for: the instance stays RUNNING with its next step queued an hour ahead. */
const HOUR_S = 3600;

/**
 * The workflow routes (D33, D34, D49, D9, D10; issue 12 "Tests"): the state machine every state ×
 * every action, tenant isolation on every route, permissions and four-eyes, the feature switch,
 * bad input, invalid definitions, listing, pause and cancel. The workflows used are this file's own
 * rows of app_workflow_configs, so each state is reached deterministically.
 */
describe('workflow routes (issue 12)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Partial<Record<Who, string>> = {};

  // ---------------------------------------------------------------------------------------------
  // Helpers
  // ---------------------------------------------------------------------------------------------

  const tenantOf = (who: Who): string => (who === 'globex' ? TENANT.globex : TENANT.acme);

  const call = (method: 'GET' | 'POST', url: string, who: Who = 'admin', payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenantOf(who), token[who] ?? ''),
      ...(payload === undefined ? {} : { payload: payload as Rec }),
    });

  /** Inserts a definition (D35) into app_workflow_configs for a tenant (1 = acme, 2 = globex). */
  const defineWorkflow = async (
    code: string,
    schema: unknown,
    options: { tenantId?: number; version?: number } = {},
  ): Promise<void> => {
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_workflow_configs')
      .values({
        wft_tenant_id: options.tenantId ?? 1,
        wft_code: code,
        wft_name: `Test ${code}`,
        wft_schema: typeof schema === 'string' ? schema : JSON.stringify(schema),
        wft_version: options.version ?? 1,
        wft_status: 1,
        wft_is_deleted: 0,
      })
      .execute();
  };

  /** POST …/{code}/start; expects 202 and returns the new instance (status PENDING). */
  const start = async (code: string, who: Who = 'admin', input: Rec = {}): Promise<Rec> => {
    const res = await call('POST', `${BASE}/${code}/start`, who, { input });
    expect([res.statusCode, res.json().data?.status]).toEqual([202, 'PENDING']);
    return res.json().data as Rec;
  };

  /** POST …/instances/{id}/{action}. */
  const act = (id: number, action: Action, who: Who = 'admin', body?: Rec) =>
    call('POST', `${BASE}/instances/${id}/${action}`, who, body);

  /** GET …/instances/{id} (with node states). */
  const instance = async (id: number, who: Who = 'admin'): Promise<Rec> => {
    const res = await call('GET', `${BASE}/instances/${id}`, who);
    expect(res.statusCode).toBe(200);
    return res.json().data as Rec;
  };

  const logs = async (id: number, who: Who = 'admin'): Promise<Rec[]> => {
    const res = await call('GET', `${BASE}/instances/${id}/logs`, who);
    expect(res.statusCode).toBe(200);
    return res.json().data as Rec[];
  };

  const messages = async (id: number): Promise<string[]> =>
    (await logs(id)).map((l): string => String(l.message));

  /** Polls the instance until `check` holds; returns it. */
  const waitUntil = async (
    id: number,
    check: (i: Rec) => boolean,
    who: Who = 'admin',
    timeoutMs = 20000,
  ): Promise<Rec> => {
    let last: Rec = {};
    try {
      await waitFor(
        async () => {
          last = await instance(id, who);
          return check(last);
        },
        timeoutMs,
        50,
      );
    } catch (err) {
      throw new Error(`Instance ${id} never got there; last seen: ${JSON.stringify(last)} (${String(err)})`);
    }
    return last;
  };

  const waitForStatus = (id: number, status: State) => waitUntil(id, (i) => i.status === status);

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const countOf = async (table: string, where?: string, params: Rec = {}): Promise<number> => {
    const qb = ds.createQueryBuilder().select('COUNT(*)', 'n').from(table, 'x');
    if (where) qb.where(where, params);
    const row = await qb.getRawOne<{ n: unknown }>();
    return Number(row?.n ?? 0);
  };

  const queueRows = (id: number) => countOf('wft_queue', 'x.wfq_instance_id = :id', { id });

  const queueStatuses = async (id: number): Promise<string[]> =>
    (
      await ds
        .createQueryBuilder()
        .select('q.wfq_status', 'status')
        .from('wft_queue', 'q')
        .where('q.wfq_instance_id = :id', { id })
        .getRawMany<{ status: unknown }>()
    ).map((r): string => String(r.status));

  const expectError = (res: { statusCode: number; json: () => any }, status: number, code: string) => {
    expect([res.statusCode, res.json().error?.code]).toEqual([status, code]);
    expect(res.json().success).toBe(false);
  };

  /** 400 VALIDATION_ERROR whose details name `field` (a [{field, error}] list). */
  const expectValidation = (res: { statusCode: number; json: () => any }, field: string) => {
    expectError(res, 400, 'VALIDATION_ERROR');
    const details = res.json().error.details as Rec[];
    expect(Array.isArray(details)).toBe(true);
    expect(details.map((d): unknown => d.field)).toContain(field);
  };

  // ---------------------------------------------------------------------------------------------
  // This file's workflows (acme unless said otherwise)
  // ---------------------------------------------------------------------------------------------

  const WF = {
    /** One log step: runs to COMPLETED. */
    log: 'wfr_log',
    /** delay 1 h → log: RUNNING, its second step queued an hour ahead. */
    delay: 'wfr_delay',
    /** approval → delay 1 h → log: RUNNING, waiting for an approval (then RUNNING at the delay). */
    approval: 'wfr_approval',
    /** approval with allowSelfApproval: true → log. */
    selfApproval: 'wfr_self_approval',
    /** entity.update of a customer that does not exist, onError fail: a permanent 404 → FAILED. */
    fail: 'wfr_fail',
    /** log → delay 1 s → log. */
    pause: 'wfr_pause',
    /** One log step, for the listing test. */
    list: 'wfr_list',
    /** globex's own workflow. */
    globex: 'wfr_globex_only',
    /** Invalid definitions. */
    badType: 'wfr_bad_type',
    badNext: 'wfr_bad_next',
  } as const;

  beforeAll(async () => {
    t = await startTestApp({ label: 'workflow-routes', env: { WORKFLOW_POLL_MS: '50' } });
    ds = t.app.get(DatabaseService).dataSource;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    for (const who of ['admin', 'viewer', 'root', 'globex'] as const) expect(token[who]).toBeTruthy();

    const log = (id: string, message: string, next?: string) => ({
      id,
      type: 'log',
      config: { level: 'info', message },
      ...(next ? { next } : {}),
    });
    await defineWorkflow(WF.log, { trigger: { type: 'manual' }, steps: [log('only', 'The only step ran')] });
    await defineWorkflow(WF.delay, {
      steps: [
        { id: 'wait', type: 'delay', config: { seconds: HOUR_S }, next: 'after' },
        log('after', 'After the long delay'),
      ],
    });
    await defineWorkflow(WF.approval, {
      steps: [
        { id: 'approve_it', type: 'approval', config: { message: 'Approve test {{input.n}}' }, next: 'hold' },
        { id: 'hold', type: 'delay', config: { seconds: HOUR_S }, next: 'end' },
        log('end', 'Approved path ended'),
      ],
    });
    await defineWorkflow(WF.selfApproval, {
      steps: [
        { id: 'self_ok', type: 'approval', config: { allowSelfApproval: true }, next: 'end' },
        log('end', 'Self-approved'),
      ],
    });
    await defineWorkflow(WF.fail, {
      steps: [
        {
          id: 'touch_missing',
          type: 'entity.update',
          config: { entityCode: 'customers', id: 987654321, values: { internal_notes: 'never' } },
          onError: 'fail',
          next: 'unreached',
        },
        log('unreached', 'Should never run'),
      ],
      errorHandling: { retry: { maxAttempts: 3, backoffMs: 10 } },
    });
    await defineWorkflow(WF.pause, {
      steps: [
        log('first', 'First step ran', 'wait'),
        { id: 'wait', type: 'delay', config: { seconds: 1 }, next: 'last' },
        log('last', 'Last step ran'),
      ],
    });
    await defineWorkflow(WF.list, { steps: [log('only', 'Listed')] });
    await defineWorkflow(WF.globex, { steps: [log('only', 'Globex only')] }, { tenantId: 2 });
    await defineWorkflow(WF.badType, {
      steps: [log('ok_step', 'fine', 'bogus_step'), { id: 'bogus_step', type: 'teleport', config: {} }],
    });
    await defineWorkflow(WF.badNext, { steps: [log('dangling', 'fine', 'missing_step')] });
  });

  afterAll(async () => {
    await t?.close();
  });

  // ---------------------------------------------------------------------------------------------
  // States, reached deterministically
  // ---------------------------------------------------------------------------------------------

  /** RUNNING with the step after a one-hour delay queued. */
  const runningAtDelay = async (): Promise<number> => {
    const { id } = await start(WF.delay);
    await waitUntil(id, (i) => i.status === 'RUNNING' && i.currentNode === 'after');
    return id as number;
  };

  /** RUNNING, waiting at the approval step (started by admin). */
  const runningAtApproval = async (who: Who = 'admin', code: string = WF.approval): Promise<number> => {
    const { id } = await start(code, who, { n: 1 });
    const waiting = await waitUntil(id, (i) => i.waitingFor !== null);
    expect(waiting.status).toBe('RUNNING');
    return id as number;
  };

  /**
   * PENDING = queued, not picked by a worker yet. The worker picks a fresh instance within
   * milliseconds, so the state is made in the database: an instance whose next step is queued an
   * hour ahead (nothing will claim it) is put back to PENDING.
   */
  const pending = async (): Promise<number> => {
    const id = await runningAtDelay();
    await ds
      .createQueryBuilder()
      .update('wft_instances')
      .set({ wfi_status: 'PENDING' })
      .where('wfi_id = :id', { id })
      .execute();
    expect((await instance(id)).status).toBe('PENDING');
    return id;
  };

  const paused = async (): Promise<number> => {
    const id = await runningAtApproval();
    const res = await act(id, 'pause', 'admin', { reason: 'set-up' });
    expect([res.statusCode, res.json().data?.status]).toEqual([200, 'PAUSED']);
    return id;
  };

  const completed = async (): Promise<number> => {
    const { id } = await start(WF.log);
    await waitForStatus(id, 'COMPLETED');
    return id as number;
  };

  const failed = async (): Promise<number> => {
    const { id } = await start(WF.fail);
    const done = await waitForStatus(id, 'FAILED');
    expect(done.error).toEqual(expect.stringContaining('touch_missing'));
    return id as number;
  };

  const cancelled = async (): Promise<number> => {
    const id = await runningAtDelay();
    const res = await act(id, 'cancel', 'admin', { reason: 'set-up' });
    expect([res.statusCode, res.json().data?.status]).toEqual([200, 'CANCELLED']);
    return id;
  };

  // ---------------------------------------------------------------------------------------------
  // 1. The state machine (D34): every state × every action
  // ---------------------------------------------------------------------------------------------

  describe('state machine (D34): every state × every action', () => {
    interface Start {
      state: State;
      make: () => Promise<number>;
      /** The legal actions and the status they answer (and leave). */
      legal: Partial<Record<Action, State>>;
    }
    const STARTS: Record<string, Start> = {
      PENDING: { state: 'PENDING', make: () => pending(), legal: { pause: 'PAUSED', cancel: 'CANCELLED' } },
      'RUNNING (at a delay)': {
        state: 'RUNNING',
        make: () => runningAtDelay(),
        legal: { pause: 'PAUSED', cancel: 'CANCELLED' },
      },
      'RUNNING (waiting for an approval)': {
        state: 'RUNNING',
        make: () => runningAtApproval(),
        // approve: on to the one-hour delay (RUNNING); reject without onReject: the instance fails.
        legal: { pause: 'PAUSED', cancel: 'CANCELLED', approve: 'RUNNING', reject: 'FAILED' },
      },
      PAUSED: { state: 'PAUSED', make: () => paused(), legal: { resume: 'RUNNING', cancel: 'CANCELLED' } },
      COMPLETED: { state: 'COMPLETED', make: () => completed(), legal: {} },
      FAILED: { state: 'FAILED', make: () => failed(), legal: {} },
      CANCELLED: { state: 'CANCELLED', make: () => cancelled(), legal: {} },
    };
    const CASES = Object.keys(STARTS).flatMap((label) =>
      ACTIONS.map((action) => {
        const to = STARTS[label].legal[action];
        return { label, action, to, answer: to ? `200 ${to}` : `409 CONFLICT (${STARTS[label].state})` };
      }),
    );

    it('should cover all six states and five actions', () => {
      expect(new Set(Object.values(STARTS).map((s) => s.state))).toEqual(
        new Set(['PENDING', 'RUNNING', 'PAUSED', 'COMPLETED', 'FAILED', 'CANCELLED']),
      );
      expect(CASES).toHaveLength(Object.keys(STARTS).length * ACTIONS.length);
    });

    it.each(CASES)('$label + $action → $answer', async ({ label, action, to }) => {
      const from = STARTS[label];
      const id = await from.make();
      // approve/reject by another admin (four-eyes is not what is tested here).
      const who: Who = action === 'approve' || action === 'reject' ? 'root' : 'admin';
      const res = await act(id, action, who, action === 'approve' || action === 'reject' ? {} : undefined);
      if (to) {
        expect([res.statusCode, res.json().data?.status]).toEqual([200, to]);
        expect(res.json().data.id).toBe(id);
        expect((await instance(id)).status).toBe(to);
      } else {
        expectError(res, 409, 'CONFLICT');
        expect(res.json().error.details).toMatchObject({ status: from.state });
        expect((await instance(id)).status).toBe(from.state);
      }
    });

    it('should go on to the next step after an approval, and record the approver', async () => {
      const id = await runningAtApproval();
      const res = await act(id, 'approve', 'root', { comment: 'fine by me' });
      expect(res.statusCode).toBe(200);
      const after = await waitUntil(id, (i) => i.currentNode === 'end');
      expect(after).toMatchObject({ status: 'RUNNING', waitingFor: null });
      const node = (after.nodes as Rec[]).find((n) => n.nodeId === 'approve_it');
      expect(node).toMatchObject({
        status: 'COMPLETED',
        output: { decision: 'approved', comment: 'fine by me', approver: { email: 'root@acme.test' } },
      });
    });

    it('should fail the instance on a rejection without onReject, naming the approver', async () => {
      const id = await runningAtApproval();
      const res = await act(id, 'reject', 'root', { comment: 'no way' });
      expect([res.statusCode, res.json().data.status]).toEqual([200, 'FAILED']);
      expect(res.json().data.error).toEqual(expect.stringContaining('root@acme.test'));
      expect(res.json().data.error).toEqual(expect.stringContaining('no way'));
      expect(await queueRows(id)).toBe(0);
    });

    it('should resume a paused PENDING instance to RUNNING (PENDING → PAUSED → RUNNING)', async () => {
      const id = await pending();
      expect((await act(id, 'pause')).json().data.status).toBe('PAUSED');
      expect(await queueStatuses(id)).toEqual(['held']);
      const res = await act(id, 'resume');
      expect([res.statusCode, res.json().data.status]).toEqual([200, 'RUNNING']);
      expect(await queueStatuses(id)).toEqual(['ready']);
    });

    it('should answer 409 with the current state for approve/reject on a RUNNING instance not at an approval', async () => {
      const id = await runningAtDelay();
      for (const action of ['approve', 'reject'] as const) {
        const res = await act(id, action, 'root');
        expectError(res, 409, 'CONFLICT');
        expect(res.json().error.details).toMatchObject({ status: 'RUNNING', currentNode: 'after' });
      }
    });

    it('should let a resumed approval be decided', async () => {
      const id = await paused();
      const waiting = (await act(id, 'resume')).json().data as Rec;
      expect(waiting).toMatchObject({ status: 'RUNNING', waitingFor: { step: 'approve_it' } });
      expect((await act(id, 'approve', 'root')).statusCode).toBe(200);
    });

    it('should let exactly one of two concurrent approvals win; the other is 409', async () => {
      const id = await runningAtApproval();
      const answers = await Promise.all([act(id, 'approve', 'root'), act(id, 'approve', 'root')]);
      expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409]);
      const lost = answers.find((r) => r.statusCode === 409);
      expect(lost?.json().error.code).toBe('CONFLICT');
      await waitUntil(id, (i) => i.currentNode === 'end');
      expect((await messages(id)).filter((m) => m.startsWith('Approved at approve_it'))).toHaveLength(1);
    });

    it('should serialise a concurrent pause and cancel: the instance ends CANCELLED with no queue items', async () => {
      const id = await runningAtDelay();
      const [pause, cancel] = await Promise.all([act(id, 'pause'), act(id, 'cancel')]);
      // Either order is legal (RUNNING → PAUSED → CANCELLED), or the pause comes too late (409).
      expect(cancel.statusCode).toBe(200);
      expect([200, 409]).toContain(pause.statusCode);
      if (pause.statusCode === 409) expect(pause.json().error.details).toMatchObject({ status: 'CANCELLED' });
      expect((await instance(id)).status).toBe('CANCELLED');
      expect(await queueRows(id)).toBe(0);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // 2. Tenant isolation
  // ---------------------------------------------------------------------------------------------

  describe('tenant isolation', () => {
    let acmeId: number;
    let globexId: number;

    beforeAll(async () => {
      acmeId = await runningAtApproval();
      globexId = (await start(WF.globex, 'globex')).id as number;
      await waitUntil(globexId, (i) => i.status === 'COMPLETED', 'globex');
    });

    it("should answer 404 on every instance route for another tenant's instance", async () => {
      const routes: Array<['GET' | 'POST', string]> = [
        ['GET', `${BASE}/instances/${acmeId}`],
        ['GET', `${BASE}/instances/${acmeId}/logs`],
        ...ACTIONS.map((a): ['POST', string] => ['POST', `${BASE}/instances/${acmeId}/${a}`]),
      ];
      for (const [method, url] of routes) {
        const res = await call(method, url, 'globex', method === 'POST' ? {} : undefined);
        expect([url, res.statusCode, res.json().error?.code]).toEqual([url, 404, 'NOT_FOUND']);
      }
      // Nothing happened to it.
      const still = await instance(acmeId);
      expect(still).toMatchObject({ status: 'RUNNING', waitingFor: { step: 'approve_it' } });
    });

    it("should answer 404 to acme for globex's instance", async () => {
      const res = await call('GET', `${BASE}/instances/${globexId}`, 'admin');
      expectError(res, 404, 'NOT_FOUND');
      expectError(await act(globexId, 'cancel', 'admin'), 404, 'NOT_FOUND');
      // globex itself reads it.
      const own = await call('GET', `${BASE}/instances/${globexId}`, 'globex');
      expect([own.statusCode, own.json().data.workflowCode]).toEqual([200, WF.globex]);
    });

    it("should never list another tenant's instances", async () => {
      const acmeList = await call('GET', `${BASE}/instances?pageSize=100`, 'admin');
      expect(acmeList.statusCode).toBe(200);
      const acmeIds = (acmeList.json().data as Rec[]).map((i): unknown => i.id);
      expect(acmeIds).toContain(acmeId);
      expect(acmeIds).not.toContain(globexId);
      const acmeByCode = await call('GET', `${BASE}/instances?code=${WF.globex}`, 'admin');
      expect([acmeByCode.json().data, acmeByCode.json().total]).toEqual([[], 0]);

      const globexList = await call('GET', `${BASE}/instances?pageSize=100`, 'globex');
      expect(globexList.statusCode).toBe(200);
      const globexIds = (globexList.json().data as Rec[]).map((i): unknown => i.id);
      expect(globexIds).toEqual([globexId]);
      expect(globexList.json().total).toBe(1);
    });

    it("should neither list nor start another tenant's workflow definition", async () => {
      const acmeDefs = (await call('GET', BASE, 'admin')).json().data as Rec[];
      const acmeCodes = acmeDefs.map((d): unknown => d.code);
      expect(acmeCodes).toEqual(expect.arrayContaining([WF.log, 'customer_onboarding']));
      expect(acmeCodes).not.toContain(WF.globex);
      const globexCodes = ((await call('GET', BASE, 'globex')).json().data as Rec[]).map(
        (d): unknown => d.code,
      );
      expect(globexCodes).toContain(WF.globex);
      expect(globexCodes).toContain('customer_onboarding');
      expect(globexCodes).not.toContain(WF.log);

      const before = await countOf('wft_instances');
      expectError(await call('POST', `${BASE}/${WF.globex}/start`, 'admin', { input: {} }), 404, 'NOT_FOUND');
      expectError(await call('POST', `${BASE}/${WF.log}/start`, 'globex', { input: {} }), 404, 'NOT_FOUND');
      expect(await countOf('wft_instances')).toBe(before);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // 3. Permissions (D9), four-eyes (D49), feature switch (D10)
  // ---------------------------------------------------------------------------------------------

  describe('permissions', () => {
    let waitingId: number;
    let runningId: number;
    let pausedId: number;

    beforeAll(async () => {
      waitingId = await runningAtApproval();
      runningId = await runningAtDelay();
      pausedId = await paused();
    });

    it('should let a viewer (read:workflow) list and read', async () => {
      for (const url of [
        BASE,
        `${BASE}/instances`,
        `${BASE}/instances/${waitingId}`,
        `${BASE}/instances/${waitingId}/logs`,
      ]) {
        const res = await call('GET', url, 'viewer');
        expect([url, res.statusCode]).toEqual([url, 200]);
      }
    });

    it('should refuse a viewer start, pause, resume and cancel (403 FORBIDDEN)', async () => {
      const before = await countOf('wft_instances');
      expectError(await call('POST', `${BASE}/${WF.log}/start`, 'viewer', { input: {} }), 403, 'FORBIDDEN');
      expect(await countOf('wft_instances')).toBe(before);
      expectError(await act(runningId, 'pause', 'viewer'), 403, 'FORBIDDEN');
      expectError(await act(pausedId, 'resume', 'viewer'), 403, 'FORBIDDEN');
      expectError(await act(runningId, 'cancel', 'viewer'), 403, 'FORBIDDEN');
      expect((await instance(runningId)).status).toBe('RUNNING');
      expect((await instance(pausedId)).status).toBe('PAUSED');
    });

    it('should refuse a viewer approve and reject (403 FORBIDDEN)', async () => {
      expectError(await act(waitingId, 'approve', 'viewer'), 403, 'FORBIDDEN');
      expectError(await act(waitingId, 'reject', 'viewer'), 403, 'FORBIDDEN');
      expect(await instance(waitingId)).toMatchObject({
        status: 'RUNNING',
        waitingFor: { step: 'approve_it' },
      });
    });

    it('should answer 401 UNAUTHORIZED without a token on every route', async () => {
      const routes: Array<['GET' | 'POST', string]> = [
        ['GET', BASE],
        ['GET', `${BASE}/instances`],
        ['GET', `${BASE}/instances/${waitingId}`],
        ['GET', `${BASE}/instances/${waitingId}/logs`],
        ['POST', `${BASE}/${WF.log}/start`],
        ...ACTIONS.map((a): ['POST', string] => ['POST', `${BASE}/instances/${waitingId}/${a}`]),
      ];
      for (const [method, url] of routes) {
        const res = await t.app.inject({
          method,
          url,
          headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
          ...(method === 'POST' ? { payload: {} } : {}),
        });
        expect([url, res.statusCode, res.json().error?.code]).toEqual([url, 401, 'UNAUTHORIZED']);
      }
    });

    it('should not let the starter approve or reject (four-eyes), but another admin', async () => {
      const id = await runningAtApproval('admin');
      expectError(await act(id, 'approve', 'admin'), 403, 'FORBIDDEN');
      expectError(await act(id, 'reject', 'admin'), 403, 'FORBIDDEN');
      expect(await instance(id)).toMatchObject({ status: 'RUNNING', waitingFor: { step: 'approve_it' } });
      const ok = await act(id, 'approve', 'root');
      expect([ok.statusCode, ok.json().data.status]).toEqual([200, 'RUNNING']);
    });

    it('should let the starter approve when the step says allowSelfApproval: true', async () => {
      const id = await runningAtApproval('admin', WF.selfApproval);
      const ok = await act(id, 'approve', 'admin', { comment: 'my own' });
      expect(ok.statusCode).toBe(200);
      const done = await waitForStatus(id, 'COMPLETED');
      expect((done.nodes as Rec[]).find((n) => n.nodeId === 'self_ok')).toMatchObject({
        status: 'COMPLETED',
        output: { decision: 'approved', comment: 'my own', approver: { email: 'admin@acme.test' } },
      });
    });

    it('should answer 403 FEATURE_DISABLED on every route when the tenant’s workflows feature is off (D10)', async () => {
      const cache = t.app.get(CacheService);
      const original = await ds
        .createQueryBuilder()
        .select('t.tnt_features', 'features')
        .from('app_tenants', 't')
        .where('t.tnt_id = :id', { id: Number(TENANT.acme) })
        .getRawOne<{ features: unknown }>();
      const raw = original?.features;
      const restore =
        raw === null || raw === undefined ? null : typeof raw === 'string' ? raw : JSON.stringify(raw);
      const setFeatures = async (value: string | null) => {
        await ds
          .createQueryBuilder()
          .update('app_tenants')
          .set({ tnt_features: value })
          .where('tnt_id = :id', { id: Number(TENANT.acme) })
          .execute();
        await cache.delete([cache.keys.tenant(TENANT.acme)]);
      };
      await setFeatures(JSON.stringify({ workflows: false }));
      try {
        const routes: Array<['GET' | 'POST', string]> = [
          ['GET', BASE],
          ['GET', `${BASE}/instances`],
          ['GET', `${BASE}/instances/${waitingId}`],
          ['GET', `${BASE}/instances/${waitingId}/logs`],
          ['POST', `${BASE}/${WF.log}/start`],
          ...ACTIONS.map((a): ['POST', string] => ['POST', `${BASE}/instances/${waitingId}/${a}`]),
        ];
        for (const [method, url] of routes) {
          const res = await call(method, url, 'admin', method === 'POST' ? {} : undefined);
          expect([url, res.statusCode, res.json().error?.code]).toEqual([url, 403, 'FEATURE_DISABLED']);
        }
        // Another tenant is not affected.
        expect((await call('GET', BASE, 'globex')).statusCode).toBe(200);
      } finally {
        await setFeatures(restore);
      }
      expect((await call('GET', BASE, 'admin')).statusCode).toBe(200);
      expect(await instance(waitingId)).toMatchObject({
        status: 'RUNNING',
        waitingFor: { step: 'approve_it' },
      });
    });
  });

  // ---------------------------------------------------------------------------------------------
  // 4. Bad input
  // ---------------------------------------------------------------------------------------------

  describe('bad input', () => {
    let id: number;

    beforeAll(async () => {
      id = await runningAtApproval();
    });

    // An id of digits beyond INT names no instance: 404 (D45), in test/e2e/hardening.e2e-spec.ts.
    it.each(['abc', '0', '-1', '1.5', '1e3', '00'])(
      'should answer 400 VALIDATION_ERROR for instance id %p on every instance route',
      async (bad) => {
        const routes: Array<['GET' | 'POST', string]> = [
          ['GET', `${BASE}/instances/${bad}`],
          ['GET', `${BASE}/instances/${bad}/logs`],
          ...ACTIONS.map((a): ['POST', string] => ['POST', `${BASE}/instances/${bad}/${a}`]),
        ];
        for (const [method, url] of routes) {
          const res = await call(method, url, 'admin', method === 'POST' ? {} : undefined);
          expect([url, res.statusCode, res.json().error?.code]).toEqual([url, 400, 'VALIDATION_ERROR']);
          expect(res.json().error.details).toEqual([expect.objectContaining({ field: 'id' })]);
        }
      },
    );

    it('should answer 404 for an instance id that does not exist', async () => {
      expectError(await call('GET', `${BASE}/instances/987654321`), 404, 'NOT_FOUND');
      expectError(await act(987654321, 'pause'), 404, 'NOT_FOUND');
      expectError(await act(987654321, 'approve', 'root'), 404, 'NOT_FOUND');
    });

    it('should refuse a start body with an unknown key, a non-object input, or version 0', async () => {
      const before = await countOf('wft_instances');
      const startWith = (payload: unknown) => call('POST', `${BASE}/${WF.log}/start`, 'admin', payload);
      expectValidation(await startWith({ input: {}, priority: 1 }), 'priority');
      expectValidation(await startWith({ input: 'text' }), 'input');
      expectValidation(await startWith({ input: [1, 2] }), 'input');
      expectValidation(await startWith({ input: 42 }), 'input');
      expectValidation(await startWith({ input: {}, version: 0 }), 'version');
      expectValidation(await startWith({ input: {}, version: 1.5 }), 'version');
      expectValidation(await startWith({ input: {}, version: '1' }), 'version');
      expectValidation(await startWith([1]), 'body');
      expect(await countOf('wft_instances')).toBe(before);
    });

    it('should answer 404 for an unknown workflow code or version', async () => {
      const before = await countOf('wft_instances');
      expectError(
        await call('POST', `${BASE}/no_such_workflow/start`, 'admin', { input: {} }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await call('POST', `${BASE}/${WF.log}/start`, 'admin', { input: {}, version: 99 }),
        404,
        'NOT_FOUND',
      );
      expectError(
        await call('POST', `${BASE}/customer_onboarding/start`, 'admin', { input: {}, version: 3 }),
        404,
        'NOT_FOUND',
      );
      expect(await countOf('wft_instances')).toBe(before);
    });

    it('should refuse a reason or comment longer than 2000 characters, and unknown body keys', async () => {
      const long = 'x'.repeat(2001);
      for (const action of ['pause', 'resume', 'cancel'] as const)
        expectValidation(await act(id, action, 'admin', { reason: long }), 'reason');
      for (const action of ['approve', 'reject'] as const) {
        expectValidation(await act(id, action, 'root', { comment: long }), 'comment');
        expectValidation(await act(id, action, 'root', { reason: 'wrong key' }), 'reason');
      }
      expectValidation(await act(id, 'pause', 'admin', { reason: 42 }), 'reason');
      // 2000 is the limit, not over it.
      const ok = await act(id, 'pause', 'admin', { reason: 'y'.repeat(2000) });
      expect([ok.statusCode, ok.json().data.status]).toEqual([200, 'PAUSED']);
    });

    it('should refuse bad list parameters', async () => {
      const list = (query: string) => call('GET', `${BASE}/instances?${query}`);
      expectValidation(await list('status=BOGUS'), 'status');
      expectValidation(await list('pageSize=1000'), 'pageSize');
      expectValidation(await list('pageSize=0'), 'pageSize');
      expectValidation(await list('page=0'), 'page');
      expectValidation(await list('page=abc'), 'page');
      expectValidation(await list('code=bad%20code'), 'code');
      expectValidation(await call('GET', `${BASE}/instances/${id}/logs?limit=100000`), 'limit');
    });
  });

  // ---------------------------------------------------------------------------------------------
  // 5. Invalid definitions
  // ---------------------------------------------------------------------------------------------

  describe('invalid definition', () => {
    it.each([
      [WF.badType, 'bogus_step', /type/],
      [WF.badNext, 'dangling', /missing_step/],
    ])(
      'should refuse to start %s with 400 naming step %s, creating no instance',
      async (code, step, error) => {
        const before = await countOf('wft_instances');
        const res = await call('POST', `${BASE}/${code}/start`, 'admin', { input: {} });
        expectError(res, 400, 'VALIDATION_ERROR');
        const details = res.json().error.details as Rec[];
        const named = details.filter((d) => String(d.field).includes(step));
        expect(named.length).toBeGreaterThan(0);
        expect(named.map((d): string => `${String(d.field)}: ${String(d.error)}`).join('\n')).toMatch(error);
        expect(await countOf('wft_instances')).toBe(before);
        expect(await countOf('wft_instances', 'x.wfi_workflow_code = :code', { code })).toBe(0);
      },
    );
  });

  // ---------------------------------------------------------------------------------------------
  // 6. Listing
  // ---------------------------------------------------------------------------------------------

  describe('listing instances', () => {
    const done: number[] = [];
    let running: number;

    beforeAll(async () => {
      for (let i = 0; i < 3; i++) done.push((await start(WF.list, 'admin', { i })).id as number);
      for (const id of done) await waitForStatus(id, 'COMPLETED');
      running = await runningAtDelay();
    });

    const list = async (query: string): Promise<Rec> => {
      const res = await call('GET', `${BASE}/instances?${query}`);
      expect(res.statusCode).toBe(200);
      return res.json<Rec>();
    };

    it('should filter by code and put count, total, page and pageSize beside data', async () => {
      const body = await list(`code=${WF.list}`);
      expect(body).toMatchObject({ success: true, count: 3, total: 3, page: 1, pageSize: 25 });
      expect((body.data as Rec[]).map((i): unknown => i.id).sort((a, b) => Number(a) - Number(b))).toEqual(
        done,
      );
      for (const i of body.data as Rec[])
        expect(i).toMatchObject({ workflowCode: WF.list, status: 'COMPLETED', version: 1 });
    });

    it('should filter by status', async () => {
      const runningOnes = await list('status=RUNNING&pageSize=100');
      const ids = (runningOnes.data as Rec[]).map((i): unknown => i.id);
      expect(ids).toContain(running);
      for (const id of done) expect(ids).not.toContain(id);
      for (const i of runningOnes.data as Rec[]) expect(i.status).toBe('RUNNING');
      expect(runningOnes.total).toBe(ids.length);

      const none = await list(`status=RUNNING&code=${WF.list}`);
      expect(none).toMatchObject({ data: [], count: 0, total: 0 });
      const both = await list(`status=COMPLETED&code=${WF.list}`);
      expect(both).toMatchObject({ count: 3, total: 3 });
    });

    it('should page: pageSize 2 gives two pages that together are every instance once, newest first', async () => {
      const p1 = await list(`code=${WF.list}&status=COMPLETED&page=1&pageSize=2`);
      const p2 = await list(`code=${WF.list}&status=COMPLETED&page=2&pageSize=2`);
      const p3 = await list(`code=${WF.list}&status=COMPLETED&page=3&pageSize=2`);
      expect(p1).toMatchObject({ count: 2, total: 3, page: 1, pageSize: 2 });
      expect(p2).toMatchObject({ count: 1, total: 3, page: 2, pageSize: 2 });
      expect(p3).toMatchObject({ data: [], count: 0, total: 3, page: 3, pageSize: 2 });
      const ids = [...(p1.data as Rec[]), ...(p2.data as Rec[])].map((i): number => Number(i.id));
      expect(ids).toEqual([...done].reverse());
    });

    it('should match the code filter exactly, as start does (no case-insensitive match on any dialect)', async () => {
      const upper = WF.list.toUpperCase();
      // The definition lookup is exact on every dialect …
      expectError(await call('POST', `${BASE}/${upper}/start`, 'admin', { input: {} }), 404, 'NOT_FOUND');
      // … and so must the instance list's filter be.
      expect(await list(`code=${upper}`)).toMatchObject({ data: [], count: 0, total: 0 });
    });

    it('should show in the list what GET shows: waitingFor of an instance waiting for an approval', async () => {
      const id = await runningAtApproval();
      const single = await instance(id);
      expect(single.waitingFor).toMatchObject({ type: 'approval', step: 'approve_it' });
      const listed = ((await list(`code=${WF.approval}&status=RUNNING&pageSize=100`)).data as Rec[]).find(
        (i) => i.id === id,
      );
      expect(listed).toBeDefined();
      expect(listed?.waitingFor).toEqual(single.waitingFor);
    });
  });

  // ---------------------------------------------------------------------------------------------
  // 7. Pause and cancel (D49)
  // ---------------------------------------------------------------------------------------------

  describe('pause and cancel (D49)', () => {
    it('should take a pause before the next step: a delayed step does not run while paused; resume completes', async () => {
      const { id } = await start(WF.pause);
      await waitUntil(id, (i) => i.status === 'RUNNING' && i.currentNode === 'last');
      const res = await act(id, 'pause', 'admin', { reason: 'hold on' });
      expect([res.statusCode, res.json().data.status]).toEqual([200, 'PAUSED']);
      expect(await queueStatuses(id)).toEqual(['held']);

      await sleep(1500);
      const still = await instance(id);
      expect(still).toMatchObject({ status: 'PAUSED', currentNode: 'last' });
      expect((still.nodes as Rec[]).map((n): unknown => n.nodeId)).not.toContain('last');
      const before = await messages(id);
      expect(before).toContain('First step ran');
      expect(before).not.toContain('Last step ran');
      expect(before.some((m) => m.includes('Paused') && m.includes('hold on'))).toBe(true);

      const resumed = await act(id, 'resume');
      expect([resumed.statusCode, resumed.json().data.status]).toEqual([200, 'RUNNING']);
      const done = await waitForStatus(id, 'COMPLETED');
      expect((done.nodes as Rec[]).map((n): unknown[] => [n.nodeId, n.status])).toEqual([
        ['first', 'COMPLETED'],
        ['wait', 'COMPLETED'],
        ['last', 'COMPLETED'],
      ]);
      expect((await messages(id)).filter((m) => m === 'Last step ran')).toHaveLength(1);
      expect(await queueRows(id)).toBe(0);
    });

    it('should clear the queue items of a cancelled instance and log the reason', async () => {
      const id = await runningAtDelay();
      expect(await queueRows(id)).toBe(1);
      const res = await act(id, 'cancel', 'admin', { reason: 'Customer withdrew' });
      expect([res.statusCode, res.json().data.status]).toEqual([200, 'CANCELLED']);
      expect(res.json().data.completedAt).toEqual(expect.any(String));
      expect(await queueRows(id)).toBe(0);
      const entries = await logs(id);
      const entry = entries.find((l) => String(l.message).includes('Customer withdrew'));
      expect(entry).toBeDefined();
      expect(entry).toMatchObject({ level: 'warn' });
      expect(String(entry?.message)).toContain('admin@acme.test');
    });

    it('should clear the held queue items of a paused instance on cancel', async () => {
      const id = await runningAtDelay();
      expect((await act(id, 'pause')).json().data.status).toBe('PAUSED');
      expect(await queueStatuses(id)).toEqual(['held']);
      const res = await act(id, 'cancel', 'admin', { reason: 'Paused, then dropped' });
      expect([res.statusCode, res.json().data.status]).toEqual([200, 'CANCELLED']);
      expect(await queueRows(id)).toBe(0);
      expect((await messages(id)).some((m) => m.includes('Paused, then dropped'))).toBe(true);
    });
  });
});
