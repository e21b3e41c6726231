import { httpStatusOf } from '../../src/common/errors/error-codes';
import type { DataSource } from 'typeorm';
import { AppError } from '../../src/common/errors/app-error';
import { DatabaseService } from '../../src/database/database.service';
import type { NewJob } from '../../src/jobs/job.types';
import { JobTransactions } from '../../src/jobs/job-transactions';
import { JobWatch } from '../../src/jobs/job-watch';
import { JobsRepository } from '../../src/jobs/jobs.repository';
import { AdmissionLimits, JobsService } from '../../src/jobs/jobs.service';
import { TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The job table on a real database (SQLite; PostgreSQL and MariaDB with TEST_DB): claims by one
 * worker only under concurrency (the skip-locked read and the fenced take), lease expiry and
 * re-claim, cancel, release, retries, admission limits, and the tenant in every read. The app's own
 * worker is off (JOB_WORKER=off): the test plays the workers.
 */
describe('Jobs repository and admission (src/jobs)', () => {
  let t: TestApp;
  let ds: DataSource;
  let jobs: JobsRepository;
  let tx: JobTransactions;
  let service: JobsService;
  const KIND = 'test.kind';

  const newJob = (tenantId: string = TENANT.acme, createdBy: number | null = 1, kind = KIND): NewJob => ({
    tenantId,
    kind,
    createdBy,
    requestId: 'int-jobs',
    input: { n: Math.random() },
  });
  const insert = (job = newJob()) => tx.run((w) => jobs.insert(w.config, job, Date.now()));
  const claim = (owner: string, limit = 1, leaseMs = 30_000, kind = KIND) =>
    tx.run((w) => jobs.claim(w.config, owner, kind, limit, leaseMs, Date.now()));
  const status = async (id: number, tenantId: string = TENANT.acme) =>
    (await jobs.find(tenantId, id))?.status;
  /** Finishes every unfinished job of the test kind, so each test starts with none. */
  const clear = () =>
    ds.query(
      `UPDATE app_jobs SET job_status = 'CANCELLED' WHERE job_status IN ('PENDING', 'RUNNING') AND job_kind LIKE 'test.%'`,
    );

  beforeAll(async () => {
    t = await startTestApp({ label: 'jobs', env: { JOB_WORKER: 'off' } });
    ds = t.app.get(DatabaseService).dataSource;
    jobs = t.app.get(JobsRepository);
    tx = t.app.get(JobTransactions);
    service = t.app.get(JobsService);
  });

  afterAll(async () => {
    await t?.close();
  });

  beforeEach(clear);

  describe('claim', () => {
    it('should hand every job to exactly one of several workers claiming at once', async () => {
      const ids = new Set<number>();
      for (let i = 0; i < 24; i++) ids.add(await insert());
      const got = new Map<number, string[]>();
      const worker = async (owner: string) => {
        for (;;) {
          const claimed = await claim(owner, 3);
          if (claimed.length === 0) return;
          for (const j of claimed) got.set(j.id, [...(got.get(j.id) ?? []), owner]);
        }
      };
      await Promise.all(['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map(worker));
      expect([...got.keys()].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
      expect([...got.values()].filter((owners) => owners.length !== 1)).toEqual([]);
      const rows = await ds.query<Array<{ owner: string; n: number }>>(
        `SELECT job_lease_owner AS owner, COUNT(*) AS n FROM app_jobs WHERE job_status = 'RUNNING' AND job_kind = '${KIND}' GROUP BY job_lease_owner`,
      );
      expect(rows.reduce((s, r) => s + Number(r.n), 0)).toBe(ids.size);
      for (const id of got.keys()) expect((await jobs.find(TENANT.acme, id))?.attempts).toBe(1);
    });

    it('should claim only the kind asked for, and a job due later only once it is due', async () => {
      const other = await insert(newJob(TENANT.acme, 1, 'test.other'));
      const mine = await insert();
      const first = await claim('a', 5);
      expect(first.map((j) => j.id)).toEqual([mine]);
      expect(await status(other)).toBe('PENDING');
      await jobs.retryLater(
        undefined,
        first[0],
        { code: 'SERVICE_ERROR', message: 'x' },
        Date.now() + 400,
        Date.now(),
      );
      expect(await claim('b')).toEqual([]);
      await new Promise((r) => setTimeout(r, 450));
      const again = await claim('b');
      expect(again.map((j) => [j.id, j.attempts, j.owner])).toEqual([[mine, 2, 'b']]);
    });
  });

  describe('leases', () => {
    it('should let another worker claim a job whose lease ran out, and fence the first one off', async () => {
      const id = await insert();
      const [a] = await claim('a', 1, 150);
      expect(a.id).toBe(id);
      expect(await claim('b')).toEqual([]);
      await new Promise((r) => setTimeout(r, 200));
      const [b] = await claim('b', 1, 30_000);
      expect([b.id, b.attempts, b.owner]).toEqual([id, 2, 'b']);
      // The first worker wakes up: its renewal, progress and result no longer apply.
      expect(await jobs.renew(a, 30_000, Date.now(), { processed: 5, total: 10 })).toBe(false);
      expect(await tx.run((w) => jobs.complete(w.config, a, { from: 'a' }, Date.now()))).toBe(false);
      expect(await jobs.renew(b, 30_000, Date.now(), { processed: 7, total: 10 })).toBe(true);
      expect(await tx.run((w) => jobs.complete(w.config, b, { from: 'b' }, Date.now()))).toBe(true);
      const done = await jobs.find(TENANT.acme, id);
      expect(done).toMatchObject({ status: 'COMPLETED', result: { from: 'b' }, processed: 7, total: 10 });
      expect(done!.finishedAt).not.toBeNull();
    });

    it('should keep a renewed lease from running out', async () => {
      await insert();
      const [a] = await claim('a', 1, 300);
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 120));
        expect(await jobs.renew(a, 300, Date.now())).toBe(true);
      }
      expect(await claim('b')).toEqual([]);
    });

    it('should give a released job back at once without spending its attempt', async () => {
      const id = await insert();
      const [a] = await claim('a');
      expect(await tx.run((w) => jobs.release(w.config, a, Date.now()))).toBe(true);
      expect(await jobs.find(TENANT.acme, id)).toMatchObject({ status: 'PENDING', attempts: 0 });
      const [b] = await claim('b');
      expect([b.id, b.attempts]).toEqual([id, 1]);
    });
  });

  describe('cancel', () => {
    it('should cancel a pending job, which is then never claimed', async () => {
      const id = await insert();
      expect(await tx.run((w) => jobs.cancel(w.config, TENANT.acme, id, Date.now()))).toBe(true);
      expect(await status(id)).toBe('CANCELLED');
      expect(await claim('a')).toEqual([]);
      expect(await tx.run((w) => jobs.cancel(w.config, TENANT.acme, id, Date.now()))).toBe(false);
    });

    it('should stop a running job: its renewal says so and its result is not taken', async () => {
      const id = await insert();
      const [a] = await claim('a');
      expect(await tx.run((w) => jobs.cancel(w.config, TENANT.acme, id, Date.now()))).toBe(true);
      expect(await jobs.renew(a, 30_000, Date.now())).toBe(false);
      expect(await tx.run((w) => jobs.fail(w.config, a, { code: 'X', message: 'x' }, Date.now()))).toBe(
        false,
      );
      expect(await status(id)).toBe('CANCELLED');
    });
  });

  describe('tenant scoping', () => {
    it('should read, count and cancel a job only within its own tenant', async () => {
      const id = await insert(newJob(TENANT.acme, 1));
      expect(await jobs.find(TENANT.globex, id)).toBeNull();
      expect(await jobs.findMany(TENANT.globex, [id])).toEqual([]);
      expect((await jobs.findMany(TENANT.acme, [id])).map((j) => j.id)).toEqual([id]);
      expect(await tx.run((w) => jobs.cancel(w.config, TENANT.globex, id, Date.now()))).toBe(false);
      expect(await status(id)).toBe('PENDING');
      expect(await jobs.countActive(undefined, TENANT.globex, KIND, 1)).toEqual({ tenant: 0, user: 0 });
      expect(await jobs.countActive(undefined, TENANT.acme, KIND, 1)).toEqual({ tenant: 1, user: 1 });
      expect(await jobs.countActive(undefined, TENANT.acme, KIND, 2)).toEqual({ tenant: 1, user: 0 });
      await expect(service.get(TENANT.globex, id, KIND)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(service.cancel(TENANT.globex, id, KIND)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(service.get(TENANT.acme, id, 'test.other')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await service.get(TENANT.acme, id, KIND)).status).toBe('PENDING');
    });

    it('should fence a worker write on the job’s tenant too', async () => {
      const id = await insert();
      const [a] = await claim('a');
      const forged = { ...a, tenantId: TENANT.globex };
      expect(await tx.run((w) => jobs.complete(w.config, forged, {}, Date.now()))).toBe(false);
      expect(await status(id)).toBe('RUNNING');
    });
  });

  describe('admission (JobsService.enqueue)', () => {
    const limits = (over: Partial<AdmissionLimits> = {}): AdmissionLimits => ({
      perUser: 2,
      perTenant: 3,
      perInstance: 50,
      retryAfterMs: 4_000,
      noun: 'tests',
      ...over,
    });
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'queued',
        (err: unknown) =>
          err instanceof AppError ? `${httpStatusOf(err.code)} ${err.headers['Retry-After']}` : String(err),
      );

    it('should admit at most the per-user limit of many requests sent at once, and answer 429 to the rest', async () => {
      const results = await Promise.all(
        Array.from({ length: 10 }, () => outcome(service.enqueue(newJob(TENANT.acme, 7), limits()))),
      );
      expect(results.filter((r) => r === 'queued')).toHaveLength(2);
      expect(results.filter((r) => r === '429 4')).toHaveLength(8);
      expect(await jobs.countActive(undefined, TENANT.acme, KIND, 7)).toEqual({ tenant: 2, user: 2 });
    });

    it('should bound the tenant across its users, and not count another tenant', async () => {
      const results = await Promise.all(
        [11, 12, 13, 14, 15, 16].map((user) => outcome(service.enqueue(newJob(TENANT.acme, user), limits()))),
      );
      expect(results.filter((r) => r === 'queued')).toHaveLength(3);
      expect(await outcome(service.enqueue(newJob(TENANT.globex, 11), limits()))).toBe('queued');
    });

    it('should free a slot when a job finishes or is cancelled', async () => {
      const first = await service.enqueue(newJob(TENANT.acme, 21), limits({ perUser: 1 }));
      expect(await outcome(service.enqueue(newJob(TENANT.acme, 21), limits({ perUser: 1 })))).toBe('429 4');
      await service.cancel(TENANT.acme, first.id, KIND);
      expect(await outcome(service.enqueue(newJob(TENANT.acme, 21), limits({ perUser: 1 })))).toBe('queued');
    });

    it('should bound the jobs this instance has accepted and not yet seen finish', async () => {
      const watch = t.app.get(JobWatch);
      const before = watch.activeCount(KIND);
      const cap = limits({ perUser: 100, perTenant: 100, perInstance: before + 2 });
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => outcome(service.enqueue(newJob(TENANT.acme, 30 + i), cap))),
      );
      expect(results.filter((r) => r === 'queued')).toHaveLength(2);
      expect(watch.activeCount(KIND)).toBe(before + 2);
    });
  });
});
