import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { __resetOutOfContextForTests } from 'nestjs-pino/PinoLogger';
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { createApp } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config.schema';
import { DatabaseService } from '../../src/database/database.service';
import { fromDbTimestamp } from '../../src/database/dialect';
import { StartupService } from '../../src/health/startup.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { capturedLogLines } from '../support/log-capture';
import { NO_LOAD_SHEDDING, startTestApp, TestApp, waitFor } from '../support/test-app';
import { createTestDatabase, TEST_SECRETS, testCacheUrl, TestDatabase } from '../support/test-database';

jest.mock('../../src/common/logging', () =>
  jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture(),
);
const mockLogLines = capturedLogLines;

type Rec = Record<string, any>;
type Who = 'admin' | 'root';

/** Helpers over one running app: define workflows, start them, read instances, logs and rows. */
function harness(getApp: () => NestFastifyApplication, token: Partial<Record<Who, string>>) {
  const ds = (): DataSource => getApp().get(DatabaseService).dataSource;
  const call = (
    method: 'GET' | 'POST',
    url: string,
    who: Who = 'admin',
    payload?: unknown,
    headers: Record<string, string> = {},
  ) =>
    getApp().inject({
      method,
      url,
      headers: { ...authHeaders(TENANT.acme, token[who] ?? ''), ...headers },
      ...(payload === undefined ? {} : { payload: payload as Rec }),
    });

  let seq = 0;
  /** Inserts an acme definition (version 1, active) and returns its unique code. */
  const define = async (name: string, schema: Rec): Promise<string> => {
    seq += 1;
    const code = `t_${name}_${seq}`;
    await ds()
      .createQueryBuilder()
      .insert()
      .into('app_workflow_configs')
      .values({
        wft_tenant_id: 1,
        wft_code: code,
        wft_name: `Test ${name}`,
        wft_schema: JSON.stringify(schema),
        wft_version: 1,
        wft_status: 1,
        wft_is_deleted: 0,
      })
      .execute();
    return code;
  };

  const start = async (code: string, input: Rec = {}, headers: Record<string, string> = {}) => {
    const res = await call('POST', `/api/v1/workflows/${code}/start`, 'admin', { input }, headers);
    expect(res.statusCode).toBe(202);
    return res.json().data.id as number;
  };

  const instance = async (id: number): Promise<Rec> => {
    const res = await call('GET', `/api/v1/workflows/instances/${id}`);
    expect(res.statusCode).toBe(200);
    return res.json().data as Rec;
  };

  const settled = async (id: number, status: string | ((i: Rec) => boolean), timeoutMs = 20000) => {
    let last: Rec = {};
    try {
      await waitFor(
        async () => {
          last = await instance(id);
          return typeof status === 'string' ? last.status === status : status(last);
        },
        timeoutMs,
        25,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}; instance ${id} is ${JSON.stringify(last)}`);
    }
    return instance(id);
  };

  const logs = async (id: number): Promise<Rec[]> => {
    const res = await call('GET', `/api/v1/workflows/instances/${id}/logs?limit=500`);
    expect(res.statusCode).toBe(200);
    return res.json().data as Rec[];
  };

  const node = (i: Rec, nodeId: string): Rec | undefined =>
    (i.nodes as Rec[]).find((n) => n.nodeId === nodeId);
  const nodeIds = (i: Rec): string[] => (i.nodes as Rec[]).map((n) => n.nodeId as string);

  const parseJson = (value: unknown): Rec | null => {
    if (value === null || value === undefined) return null;
    if (typeof value === 'object') return value;
    return typeof value === 'string' ? (JSON.parse(value) as Rec) : null;
  };

  const customer = async (id: number): Promise<Rec | undefined> => {
    const [row] = await ds()
      .createQueryBuilder()
      .select([
        'c.cus_id AS cus_id',
        'c.cus_tenant_id AS cus_tenant_id',
        'c.cus_name AS cus_name',
        'c.cus_email AS cus_email',
        'c.cus_tier AS cus_tier',
        'c.cus_credit_limit AS cus_credit_limit',
        'c.cus_internal_notes AS cus_internal_notes',
        'c.cus_audit_data AS cus_audit_data',
      ])
      .from('demo_customers', 'c')
      .where('c.cus_id = :id', { id })
      .getRawMany<Rec>();
    return row;
  };

  const count = async (table: string, where: string, params: Rec): Promise<number> => {
    const [row] = await ds()
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from(table, 't')
      .where(where, params)
      .getRawMany<{ n: unknown }>();
    return Number(row.n);
  };

  return { ds, call, define, start, instance, settled, logs, node, nodeIds, parseJson, customer, count };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ms = (iso: unknown): number => Date.parse(String(iso));

/** The failing `set` of the retry and onError tests: arithmetic on a text throws (a plain Error). */
const boom = (extra: Rec = {}): Rec => ({
  id: 'boom',
  type: 'set',
  config: { values: { doubled: '{{input.name * 2}}' } },
  ...extra,
});
const logStep = (id: string, message: string, extra: Rec = {}): Rec => ({
  id,
  type: 'log',
  config: { level: 'info', message },
  ...extra,
});

describe('Workflow step types, retries, onError and permissions (issue 12, D35, D49)', () => {
  let t: TestApp;
  const token: Partial<Record<Who, string>> = {};
  const h = harness(() => t.app, token);
  let adminId = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'workflow-steps', env: { WORKFLOW_POLL_MS: '50' } });
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    adminId = Number(JSON.parse(Buffer.from(token.admin.split('.')[1], 'base64url').toString()).user_id);
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('log', () => {
    it('should write level, rendered message and rendered data to wft_logs', async () => {
      const code = await h.define('log', {
        steps: [
          {
            id: 'hello',
            type: 'log',
            config: {
              level: 'warn',
              message: 'Hello {{input.name}}, you are {{input.age}}',
              data: { age: '{{input.age}}', fixed: 'x', tags: '{{input.tags}}' },
            },
          },
        ],
      });
      const id = await h.start(code, { name: 'Ann', age: 41, tags: ['a', 'b'] });
      const done = await h.settled(id, 'COMPLETED');
      expect(h.node(done, 'hello')).toMatchObject({
        status: 'COMPLETED',
        attempts: 1,
        output: { level: 'warn', message: 'Hello Ann, you are 41' },
      });
      const line = (await h.logs(id)).find((l) => l.message === 'Hello Ann, you are 41');
      expect(line).toMatchObject({
        level: 'warn',
        data: { step: 'hello', data: { age: 41, fixed: 'x', tags: ['a', 'b'] } },
      });
      expect(line?.createdAt).toEqual(expect.any(String));
    });
  });

  describe('set', () => {
    it('should put the rendered values into the context, typed values keeping their types', async () => {
      const code = await h.define('set', {
        steps: [
          {
            id: 'values',
            type: 'set',
            config: {
              values: {
                n: '{{input.n}}',
                doubled: '{{input.n * 2}}',
                big: '{{input.n > 10}}',
                obj: '{{input.obj}}',
                text: 'n is {{input.n}}',
                literal: 5,
                missing: '{{input.nothing ?? null}}',
              },
            },
            next: 'more',
          },
          { id: 'more', type: 'set', config: { values: { fromContext: '{{context.doubled + 1}}' } } },
        ],
      });
      const id = await h.start(code, { n: 21, obj: { a: [1, 2], b: 'x' } });
      const done = await h.settled(id, 'COMPLETED');
      expect(done.context).toEqual({
        n: 21,
        doubled: 42,
        big: true,
        obj: { a: [1, 2], b: 'x' },
        text: 'n is 21',
        literal: 5,
        missing: null,
        fromContext: 43,
      });
      expect(h.node(done, 'values')?.output).toMatchObject({ n: 21, doubled: 42, big: true });
    });
  });

  describe('condition', () => {
    const schema = (withElse: boolean): Rec => ({
      steps: [
        {
          id: 'check',
          type: 'condition',
          config: { expression: 'input.amount > 100', then: 'big', ...(withElse ? { else: 'small' } : {}) },
        },
        logStep('big', 'big {{input.amount}}'),
        logStep('small', 'small {{input.amount}}'),
      ],
    });

    it('should go on at then when the expression is true, else at else', async () => {
      const code = await h.define('cond', schema(true));
      const big = await h.settled(await h.start(code, { amount: 500 }), 'COMPLETED');
      expect(h.nodeIds(big)).toEqual(['check', 'big']);
      expect(h.node(big, 'check')?.output).toEqual({ result: true, next: 'big' });
      const small = await h.settled(await h.start(code, { amount: 5 }), 'COMPLETED');
      expect(h.nodeIds(small)).toEqual(['check', 'small']);
      expect(h.node(small, 'check')?.output).toEqual({ result: false, next: 'small' });
      expect((await h.logs(small.id as number)).map((l): unknown => l.message)).toContain('small 5');
    });

    it('should end the workflow when the expression is false and there is no else', async () => {
      const code = await h.define('cond_no_else', schema(false));
      const done = await h.settled(await h.start(code, { amount: 5 }), 'COMPLETED');
      expect(h.nodeIds(done)).toEqual(['check']);
      expect(h.node(done, 'check')?.output).toEqual({ result: false, next: null });
      expect((await h.logs(done.id as number)).map((l): unknown => l.message)).toContain(
        'Workflow completed',
      );
    });
  });

  describe('delay', () => {
    it('should not run the next step before the delay, which is a due time on the queue row', async () => {
      const code = await h.define('delay', {
        steps: [
          { id: 'wait', type: 'delay', config: { seconds: 1 }, next: 'after' },
          logStep('after', 'after the delay'),
        ],
      });
      const startedAt = Date.now();
      const id = await h.start(code);
      const delayed = await h.settled(id, (i) => h.node(i, 'wait')?.status === 'COMPLETED', 5000);
      expect(delayed).toMatchObject({ status: 'RUNNING', currentNode: 'after' });
      expect(h.nodeIds(delayed)).toEqual(['wait']);

      const queued = await h
        .ds()
        .createQueryBuilder()
        .select(['q.wfq_node_id AS queue_node', 'q.wfq_kind AS queue_kind', 'q.wfq_available_at AS due_at'])
        .from('wft_queue', 'q')
        .where('q.wfq_instance_id = :id', { id })
        .getRawMany<Rec>();
      expect(queued).toHaveLength(1);
      expect(queued[0]).toMatchObject({ queue_node: 'after', queue_kind: 'step' });
      const due = fromDbTimestamp(queued[0].due_at, String(h.ds().options.type));
      const waitFinished = ms(h.node(delayed, 'wait')?.finishedAt);
      expect(due).not.toBeNull();
      expect(due! - waitFinished).toBeGreaterThanOrEqual(999);
      expect(due! - waitFinished).toBeLessThanOrEqual(1001);
      expect(due!).toBeGreaterThan(Date.now());

      await sleep(Math.max(0, startedAt + 300 - Date.now()));
      const at300 = await h.instance(id);
      expect(at300.status).toBe('RUNNING');
      expect(h.nodeIds(at300)).toEqual(['wait']);

      const done = await h.settled(id, 'COMPLETED', 5000);
      const after = h.node(done, 'after');
      expect(after?.status).toBe('COMPLETED');
      expect(ms(after?.startedAt) - waitFinished).toBeGreaterThanOrEqual(990);
    });
  });

  describe('entity.create and entity.update', () => {
    it('should create a customer in the acme tenant once, its id in steps.<id>.id', async () => {
      const email = `wf-create-${randomBytes(3).toString('hex')}@acme.test`;
      const code = await h.define('create', {
        steps: [
          {
            id: 'make',
            type: 'entity.create',
            config: {
              entityCode: 'customers',
              values: {
                name: '{{input.name}}',
                email: '{{input.email}}',
                tier: '{{input.tier}}',
                credit_limit: '{{input.limit}}',
              },
            },
            next: 'after',
          },
          logStep('after', 'made {{steps.make.id}}'),
        ],
      });
      const id = await h.start(code, { name: 'Workflow Customer', email, tier: 'silver', limit: 1234.5 });
      const done = await h.settled(id, 'COMPLETED');
      const made = h.node(done, 'make');
      expect(made).toMatchObject({ status: 'COMPLETED', attempts: 1, output: { entityCode: 'customers' } });
      const customerId = made?.output.id as number;
      expect(customerId).toEqual(expect.any(Number));

      expect(await h.count('demo_customers', 't.cus_email = :email', { email })).toBe(1);
      const row = await h.customer(customerId);
      expect(row).toMatchObject({ cus_name: 'Workflow Customer', cus_email: email, cus_tier: 'silver' });
      expect(Number(row?.cus_tenant_id)).toBe(1);
      expect(Number(row?.cus_credit_limit)).toBe(1234.5);
      expect(h.parseJson(row?.cus_audit_data)).toMatchObject({ version: 1 });
      expect((await h.logs(id)).map((l): unknown => l.message)).toContain(`made ${customerId}`);
    });

    it('should write the note and increase the audit version by exactly 1', async () => {
      const before = await h.customer(7);
      expect(Number(before?.cus_tenant_id)).toBe(1);
      const versionBefore = Number(h.parseJson(before?.cus_audit_data)?.version ?? 1);
      const note = `Updated by workflow ${randomBytes(3).toString('hex')}`;
      const code = await h.define('update', {
        steps: [
          {
            id: 'upd',
            type: 'entity.update',
            config: {
              entityCode: 'customers',
              id: '{{input.customerId}}',
              values: { internal_notes: '{{input.note}}' },
            },
          },
        ],
      });
      const done = await h.settled(await h.start(code, { customerId: 7, note }), 'COMPLETED');
      expect(h.node(done, 'upd')).toMatchObject({
        status: 'COMPLETED',
        attempts: 1,
        output: { entityCode: 'customers', id: 7 },
      });
      const after = await h.customer(7);
      expect(after?.cus_internal_notes).toBe(note);
      expect(after?.cus_name).toBe(before?.cus_name);
      expect(Number(h.parseJson(after?.cus_audit_data)?.version)).toBe(versionBefore + 1);
    });

    it('should let later steps read steps.<id> outputs and the record of the last entity step', async () => {
      const email = `wf-expr-${randomBytes(3).toString('hex')}@acme.test`;
      const code = await h.define('expr', {
        steps: [
          {
            id: 'make',
            type: 'entity.create',
            config: { entityCode: 'customers', values: { name: '{{input.name}}', email: '{{input.email}}' } },
            next: 'remember',
          },
          {
            id: 'remember',
            type: 'set',
            config: {
              values: {
                madeId: '{{steps.make.id}}',
                recordName: '{{record.name}}',
                recordId: '{{record.id}}',
                same: '{{record.id == steps.make.id}}',
              },
            },
            next: 'note',
          },
          {
            id: 'note',
            type: 'entity.update',
            config: {
              entityCode: 'customers',
              id: '{{steps.make.id}}',
              values: { internal_notes: 'Created {{record.name}} as {{steps.make.id}}' },
            },
            next: 'check',
          },
          {
            id: 'check',
            type: 'condition',
            config: { expression: 'record.internal_notes != null && record.id == steps.note.id', then: 'ok' },
          },
          logStep('ok', 'record now {{record.internal_notes}}'),
        ],
      });
      const done = await h.settled(await h.start(code, { name: 'Expr Customer', email }), 'COMPLETED');
      const madeId = h.node(done, 'make')?.output.id as number;
      expect(done.context).toEqual({ madeId, recordName: 'Expr Customer', recordId: madeId, same: true });
      expect(h.nodeIds(done)).toEqual(['make', 'remember', 'note', 'check', 'ok']);
      expect((await h.customer(madeId))?.cus_internal_notes).toBe(`Created Expr Customer as ${madeId}`);
      expect((await h.logs(done.id as number)).map((l): unknown => l.message)).toContain(
        `record now Created Expr Customer as ${madeId}`,
      );
      expect(await h.count('demo_customers', 't.cus_email = :email', { email })).toBe(1);
    });
  });

  describe('approval', () => {
    const approvalSchema = (config: Rec): Rec => ({
      steps: [
        {
          id: 'ask',
          type: 'approval',
          config: { message: 'Approve {{input.what}}', ...config },
          next: 'approved',
        },
        logStep('approved', 'approved path'),
        logStep('rejected_path', 'rejected path'),
        logStep('timeout_path', 'timeout path'),
      ],
    });
    const waiting = (id: number) => h.settled(id, (i) => i.waitingFor !== null, 5000);

    it('should wait, and go on at next once another user approves', async () => {
      const code = await h.define('approve', approvalSchema({}));
      const id = await h.start(code, { what: 'the order' });
      const w = await waiting(id);
      expect(w).toMatchObject({
        status: 'RUNNING',
        currentNode: 'ask',
        waitingFor: { type: 'approval', step: 'ask', message: 'Approve the order', permission: 'approve' },
      });
      expect(h.node(w, 'ask')?.status).toBe('WAITING');
      await sleep(200);
      expect(h.nodeIds(await h.instance(id))).toEqual(['ask']);

      const res = await h.call('POST', `/api/v1/workflows/instances/${id}/approve`, 'root', {
        comment: 'fine',
      });
      expect(res.statusCode).toBe(200);
      const done = await h.settled(id, 'COMPLETED');
      expect(h.nodeIds(done)).toEqual(['ask', 'approved']);
      expect(h.node(done, 'ask')).toMatchObject({
        status: 'COMPLETED',
        output: { decision: 'approved', comment: 'fine', approver: { email: 'root@acme.test' } },
      });
    });

    it('should fail the instance on a rejection without onReject', async () => {
      const code = await h.define('reject_fail', approvalSchema({}));
      const id = await h.start(code, { what: 'x' });
      await waiting(id);
      const res = await h.call('POST', `/api/v1/workflows/instances/${id}/reject`, 'root', {
        comment: 'no way',
      });
      expect(res.statusCode).toBe(200);
      const failed = await h.settled(id, 'FAILED');
      expect(failed.error).toMatch(/rejected/i);
      expect(failed.error).toContain('ask');
      expect(failed.error).toContain('no way');
      expect(h.node(failed, 'ask')).toMatchObject({ status: 'REJECTED', output: { decision: 'rejected' } });
      expect(h.nodeIds(failed)).toEqual(['ask']);
    });

    it('should go to onReject on a rejection', async () => {
      const code = await h.define('reject_goto', approvalSchema({ onReject: 'rejected_path' }));
      const id = await h.start(code, { what: 'x' });
      await waiting(id);
      const res = await h.call('POST', `/api/v1/workflows/instances/${id}/reject`, 'root');
      expect(res.statusCode).toBe(200);
      const done = await h.settled(id, 'COMPLETED');
      expect(h.nodeIds(done)).toEqual(['ask', 'rejected_path']);
      expect(h.node(done, 'ask')?.status).toBe('REJECTED');
    });

    it("should fail after timeoutS with onTimeout 'fail'", async () => {
      const code = await h.define('timeout_fail', approvalSchema({ timeoutS: 1, onTimeout: 'fail' }));
      const id = await h.start(code, { what: 'x' });
      const w = await waiting(id);
      const since = ms(h.node(w, 'ask')?.startedAt);
      expect(w.status).toBe('RUNNING');
      const failed = await h.settled(id, 'FAILED', 5000);
      expect(failed.error).toMatch(/ask timed out/);
      expect(h.node(failed, 'ask')?.status).toBe('TIMED_OUT');
      expect(ms(failed.completedAt) - since).toBeGreaterThanOrEqual(990);
      expect(ms(failed.completedAt) - since).toBeLessThan(4000);
      expect(h.nodeIds(failed)).toEqual(['ask']);
    });

    it('should go to the onTimeout step after timeoutS', async () => {
      const code = await h.define('timeout_goto', approvalSchema({ timeoutS: 1, onTimeout: 'timeout_path' }));
      const id = await h.start(code, { what: 'x' });
      const w = await waiting(id);
      const since = ms(h.node(w, 'ask')?.startedAt);
      const done = await h.settled(id, 'COMPLETED', 5000);
      expect(h.nodeIds(done)).toEqual(['ask', 'timeout_path']);
      expect(h.node(done, 'ask')?.status).toBe('TIMED_OUT');
      expect(ms(h.node(done, 'timeout_path')?.startedAt) - since).toBeGreaterThanOrEqual(990);
      expect((await h.logs(id)).map((l): unknown => l.message)).toEqual(
        expect.arrayContaining(['Approval at ask timed out (onTimeout: timeout_path)', 'timeout path']),
      );
    });
  });

  describe('retries', () => {
    it('should retry a failing step with growing backoff, then apply onError', async () => {
      const code = await h.define('retry', {
        steps: [
          boom({
            retry: { maxAttempts: 3, backoffMs: 200, backoffMultiplier: 2 },
            onError: 'recover',
            next: 'after',
          }),
          logStep('after', 'not reached'),
          logStep('recover', 'recovered'),
        ],
      });
      const id = await h.start(code, { name: 'text' });
      // The onError step runs; its path ends FAILED (the step's work never happened).
      const done = await h.settled(id, 'FAILED');
      expect(h.node(done, 'recover')?.status).toBe('COMPLETED');
      expect(h.node(done, 'boom')).toMatchObject({ status: 'FAILED', attempts: 3 });
      expect(h.node(done, 'boom')?.error).toMatch(/operator \* needs numbers/);
      expect(h.nodeIds(done)).toEqual(['boom', 'recover']);

      const lines = await h.logs(id);
      const retries = lines.filter((l) => /retrying in \d+ ms/.test(String(l.message)));
      expect(retries).toHaveLength(2);
      expect(retries.map((l): unknown => l.level)).toEqual(['warn', 'warn']);
      expect(retries[0].message).toMatch(/^Step boom failed \(attempt 1 of 3\); retrying in \d+ ms/);
      expect(retries[1].message).toMatch(/^Step boom failed \(attempt 2 of 3\); retrying in \d+ ms/);
      const final = lines.find((l) => String(l.message).startsWith('Step boom failed after 3 attempt(s)'));
      expect(final).toBeDefined();

      // Equal jitter: the waits lie in [base/2, base] with base 200 then 400.
      const [d1, d2] = retries.map((l) => Number(l.data.delayMs));
      expect(d1).toBeGreaterThanOrEqual(100);
      expect(d1).toBeLessThanOrEqual(200);
      expect(d2).toBeGreaterThanOrEqual(200);
      expect(d2).toBeLessThanOrEqual(400);
      const [t1, t2, t3] = [retries[0], retries[1], final!].map((l) => ms(l.createdAt));
      expect(t2 - t1).toBeGreaterThanOrEqual(d1 - 1);
      expect(t3 - t2).toBeGreaterThanOrEqual(d2 - 1);
      expect(t2 - t1).toBeGreaterThanOrEqual(100);
      expect(t3 - t2).toBeGreaterThanOrEqual(200);
    });

    it('should not retry a permanent error (NOT_FOUND)', async () => {
      const code = await h.define('permanent', {
        steps: [
          {
            id: 'upd',
            type: 'entity.update',
            config: { entityCode: 'customers', id: 999999, values: { internal_notes: 'x' } },
            retry: { maxAttempts: 3, backoffMs: 50 },
          },
        ],
      });
      const failed = await h.settled(await h.start(code), 'FAILED');
      expect(h.node(failed, 'upd')).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(h.node(failed, 'upd')?.error).toMatch(/^NOT_FOUND/);
      expect(failed.error).toMatch(/^Step upd: NOT_FOUND/);
      const lines = await h.logs(failed.id as number);
      expect(lines.filter((l) => /retrying/.test(String(l.message)))).toEqual([]);
      expect(lines.map((l): unknown => l.message)).toContain(
        `Step upd failed after 1 attempt(s): ${h.node(failed, 'upd')?.error}`,
      );
    });
  });

  describe('onError', () => {
    it("should fail the instance with onError 'fail', naming the step", async () => {
      const code = await h.define('onerror_fail', {
        steps: [boom({ onError: 'fail', next: 'after' }), logStep('after', 'not reached')],
      });
      const failed = await h.settled(await h.start(code, { name: 'x' }), 'FAILED');
      expect(failed.error).toMatch(/^Step boom: Expression .* failed: operator \* needs numbers/);
      expect(h.node(failed, 'boom')).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(h.nodeIds(failed)).toEqual(['boom']);
      expect((await h.logs(failed.id as number)).map((l): unknown => l.message)).toContain(
        `Workflow failed: ${failed.error}`,
      );
    });

    it("should go on at next with onError 'continue', the node FAILED", async () => {
      const code = await h.define('onerror_continue', {
        steps: [boom({ onError: 'continue', next: 'after' }), logStep('after', 'after boom')],
      });
      const done = await h.settled(await h.start(code, { name: 'x' }), 'COMPLETED');
      expect(h.nodeIds(done)).toEqual(['boom', 'after']);
      expect(h.node(done, 'boom')?.status).toBe('FAILED');
      expect(h.node(done, 'after')?.status).toBe('COMPLETED');
      expect(done.error).toBeNull();
      expect(done.context).toEqual({});
    });

    it('should go to the step onError names', async () => {
      const code = await h.define('onerror_goto', {
        steps: [
          boom({ onError: 'handler', next: 'after' }),
          logStep('after', 'not reached'),
          logStep('handler', 'handled'),
        ],
      });
      // The handler runs; the path ends FAILED with the error of the step that failed.
      const done = await h.settled(await h.start(code, { name: 'x' }), 'FAILED');
      expect(h.nodeIds(done)).toEqual(['boom', 'handler']);
      expect(h.node(done, 'boom')?.status).toBe('FAILED');
      expect(h.node(done, 'handler')?.status).toBe('COMPLETED');
      expect(done.error).toMatch(/^Step boom: .*operator \* needs numbers.*onError path/);
      const messages = (await h.logs(done.id as number)).map((l): unknown => l.message);
      expect(messages).toContain('handled');
      expect(messages).not.toContain('not reached');
    });

    it('should end COMPLETED when the failed step succeeds on a later visit (recovered)', async () => {
      // boom fails once (input.name is text), the handler fixes the input's stand-in in the
      // context, and the loop back to a step that reads it succeeds.
      const code = await h.define('onerror_recover', {
        steps: [
          {
            id: 'boom',
            type: 'set',
            config: { values: { doubled: '{{(context.n ?? input.name) * 2}}' } },
            onError: 'handler',
            next: 'after',
          },
          logStep('after', 'recovered'),
          { id: 'handler', type: 'set', config: { values: { n: 21 } }, next: 'boom' },
        ],
      });
      const done = await h.settled(await h.start(code, { name: 'x' }), 'COMPLETED');
      expect(done.context).toMatchObject({ n: 21, doubled: 42 });
      expect(done.error).toBeNull();
      expect(h.node(done, 'boom')?.status).toBe('COMPLETED');
    });

    it("should apply errorHandling.onFailure 'continue' to a step without onError", async () => {
      const code = await h.define('onfailure_continue', {
        steps: [boom({ next: 'after' }), logStep('after', 'after boom')],
        errorHandling: { onFailure: 'continue' },
      });
      const done = await h.settled(await h.start(code, { name: 'x' }), 'COMPLETED');
      expect(h.nodeIds(done)).toEqual(['boom', 'after']);
      expect(h.node(done, 'boom')).toMatchObject({ status: 'FAILED', attempts: 1 });

      const stepWins = await h.define('onfailure_step_wins', {
        steps: [boom({ next: 'after', onError: 'fail' }), logStep('after', 'after boom')],
        errorHandling: { onFailure: 'continue' },
      });
      const failed = await h.settled(await h.start(stepWins, { name: 'x' }), 'FAILED');
      expect(h.nodeIds(failed)).toEqual(['boom']);
    });

    it('should use errorHandling.retry when the step has no retry of its own', async () => {
      const code = await h.define('schema_retry', {
        steps: [boom({ next: 'after' }), logStep('after', 'after boom')],
        errorHandling: { retry: { maxAttempts: 2, backoffMs: 50 }, onFailure: 'fail' },
      });
      const failed = await h.settled(await h.start(code, { name: 'x' }), 'FAILED');
      expect(h.node(failed, 'boom')).toMatchObject({ status: 'FAILED', attempts: 2 });
      const retries = (await h.logs(failed.id as number)).filter((l) => /retrying/.test(String(l.message)));
      expect(retries).toHaveLength(1);
    });
  });

  describe('entity steps act as the starter', () => {
    it('should refuse a system-maintained entity to a tenant admin: FORBIDDEN, not retried', async () => {
      const email = `wf-user-${randomBytes(3).toString('hex')}@acme.test`;
      const code = await h.define('users_create', {
        steps: [
          {
            id: 'mkuser',
            type: 'entity.create',
            config: { entityCode: 'users', values: { email_id: email, first_name: 'Sneaky' } },
            retry: { maxAttempts: 3, backoffMs: 50 },
          },
        ],
      });
      const failed = await h.settled(await h.start(code), 'FAILED');
      expect(failed.startedBy).toBe(adminId);
      const mk = h.node(failed, 'mkuser');
      expect(mk).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(mk?.error).toMatch(/^FORBIDDEN: .*maintained by the system/);
      expect(await h.count('app_users', 't.usr_email_id = :email', { email })).toBe(0);
    });

    it("should not reach another tenant's record: NOT_FOUND, the row unchanged", async () => {
      const [globex] = await h
        .ds()
        .createQueryBuilder()
        .select('c.cus_id', 'id')
        .from('demo_customers', 'c')
        .where('c.cus_tenant_id = :tenant', { tenant: 2 })
        .orderBy('c.cus_id', 'ASC')
        .limit(1)
        .getRawMany<{ id: unknown }>();
      const globexId = Number(globex.id);
      expect(globexId).toBeGreaterThan(0);
      const before = await h.customer(globexId);
      expect(Number(before?.cus_tenant_id)).toBe(2);

      const code = await h.define('cross_tenant', {
        steps: [
          {
            id: 'steal',
            type: 'entity.update',
            config: { entityCode: 'customers', id: '{{input.id}}', values: { internal_notes: 'hijacked' } },
          },
        ],
      });
      const failed = await h.settled(await h.start(code, { id: globexId }), 'FAILED');
      expect(h.node(failed, 'steal')).toMatchObject({ status: 'FAILED', attempts: 1 });
      expect(h.node(failed, 'steal')?.error).toMatch(/^NOT_FOUND/);
      expect(await h.customer(globexId)).toEqual(before);
    });
  });
});

describe("Workflow workers' log lines (issue 12 #5)", () => {
  let app: NestFastifyApplication;
  let db: TestDatabase;
  const token: Partial<Record<Who, string>> = {};
  const h = harness(() => app, token);
  let adminId = 0;

  beforeAll(async () => {
    db = await createTestDatabase('workflow_step_logs');
    const cacheUrl = testCacheUrl();
    const config = loadConfig({
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      SEED_DEMO: 'true',
      WORKFLOW_POLL_MS: '50',
      CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}`,
      CACHE_STARTUP_RETRY_MS: '100',
      ...NO_LOAD_SHEDDING,
      ...(cacheUrl ? { CACHE_URL: cacheUrl } : {}),
      ...db.env,
    });
    // nestjs-pino keeps the logger of lines written outside a request (the workers') in a module
    // variable, set by the first app of the process: the suite above built it with LOG_LEVEL error.
    __resetOutOfContextForTests();
    // With the logger on (startTestApp turns it off): the lines under test are the real ones.
    app = await createApp(config);
    await app.init();
    app.flushLogs();
    await app.getHttpAdapter().getInstance().ready();
    await app.get(StartupService).settled();
    token.admin = (await signin(app, TENANT.acme, 'admin@acme.test')).token;
    adminId = Number(JSON.parse(Buffer.from(token.admin.split('.')[1], 'base64url').toString()).user_id);
  });

  afterAll(async () => {
    app?.get(StartupService).stop();
    await app?.close();
    await db?.drop();
  });

  /** The lines captured since `from`, parsed (the suite above may have flushed lines of its own). */
  const parsedLines = (from: number): Rec[] =>
    mockLogLines.slice(from).flatMap((l) => {
      try {
        return [JSON.parse(l) as Rec];
      } catch {
        return [];
      }
    });

  it("should give the worker's lines the start request's requestId, tenantId and userId", async () => {
    const from = mockLogLines.length;
    const code = await h.define('log_ids', {
      steps: [boom({ onError: 'continue', next: 'after' }), logStep('after', 'after boom')],
    });
    const id = await h.start(code, { name: 'x' }, { 'x-request-id': 'wf-test-123' });
    await h.settled(id, 'COMPLETED');

    const event = (name: string) => parsedLines(from).find((l) => l.msg === name && l.instanceId === id);
    await waitFor(async () => event('workflow.completed') !== undefined, 5000, 25);

    const ids = { requestId: 'wf-test-123', tenantId: TENANT.acme, userId: adminId };
    // From the start request itself.
    expect(event('workflow.started')).toMatchObject({ ...ids, event: 'workflow.started' });
    // From the worker: the event names tenant and user itself, the scope adds the request id.
    expect(event('workflow.completed')).toMatchObject({
      ...ids,
      event: 'workflow.completed',
      workflowCode: code,
      context: 'Workflow',
    });
    // From the worker, a line that names none of them: all three come from the async-local scope.
    expect(event('Workflow step failed')).toMatchObject({ ...ids, step: 'boom', context: 'WorkflowEngine' });
  });
});
