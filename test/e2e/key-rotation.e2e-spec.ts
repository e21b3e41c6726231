import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { encryptConnectionString } from '../../src/database/connections/connection-string.crypto';
import {
  decryptConnectionString,
  storedKeyId,
} from '../../src/database/connections/connection-string.crypto';
import { createDataSource } from '../../src/database/data-source.factory';
import { keyRing } from '../../src/config/key-ring';
import { encryptTenantHeader } from '../../src/tenant/tenant-header.crypto';
import { DEMO_PASSWORD, TENANT } from '../support/auth';
import { ServiceCluster, type ServiceProcess } from '../support/service-cluster';
import { TEST_SECRETS, testDialect } from '../support/test-database';

jest.setTimeout(300_000);

const dialect = testDialect();
/** Two instances on the server dialects; SQLite is one process (see cache-cluster.e2e-spec.ts). */
const SIZE = dialect === 'sqlite' ? 1 : 2;
const OLD = { jwt: TEST_SECRETS.JWT_SECRET, tenant: TEST_SECRETS.TENANT_ENCRYPTION_KEY };
const NEW = { jwt: randomBytes(36).toString('base64url'), tenant: randomBytes(32).toString('hex') };
const ROTATE = join(__dirname, '..', '..', 'dist', 'database', 'cli', 'rotate-keys.js');
const SECRET_URL = 'postgres://erp:s3cret@erp.example.test:5432/erp';

/**
 * A rotation of JWT_SECRET, TENANT_ENCRYPTION_KEY and the stored secrets' key (here the same key:
 * CONNECTION_ENCRYPTION_KEY falls back to it) done step by step as docs/key-rotation.md says,
 * under a steady load of reads through every instance (D57, issue 28): the load balancer of this
 * test takes an instance out before it restarts and back once it is ready. Every request of the
 * load must answer 200, and the session signed in before the rotation must stay signed in to the
 * end; the old key is dropped only at the end, and only then are its tokens and headers refused.
 */
describe(`Key rotation under load (D57) on ${dialect}, ${SIZE} instance(s)`, () => {
  let cluster: ServiceCluster;
  const ready = new Set<ServiceProcess>();
  let proxyKey = OLD.tenant;
  const tokens: string[] = [];
  const failures: string[] = [];
  let sent = 0;
  /** The bodies of the answers that were not 200, for the failure report. */
  const lastBodies: string[] = [];
  let loadRunning = false;
  let load: Promise<void> = Promise.resolve();

  const header = (key = proxyKey) => encryptTenantHeader(TENANT.acme, key);

  async function call(node: ServiceProcess, token: string, key = proxyKey): Promise<number> {
    const res = await fetch(`${node.client.baseUrl}/api/v1/customers?limit=5`, {
      headers: { 'x-tenant-id': header(key), authorization: `Bearer ${token}` },
    });
    const text = await res.text();
    if (res.status !== 200) lastBodies.push(text.slice(0, 300));
    return res.status;
  }

  async function signin(node: ServiceProcess): Promise<string> {
    const res = await fetch(`${node.client.baseUrl}/api/v1/auth/signin`, {
      method: 'POST',
      headers: { 'x-tenant-id': header(), 'content-type': 'application/json' },
      body: JSON.stringify({ email_id: 'admin@acme.test', password: DEMO_PASSWORD }),
    });
    const body = (await res.json()) as { data?: { token?: string } };
    if (res.status !== 200 || !body.data?.token) throw new Error(`sign-in answered ${res.status}`);
    return body.data.token;
  }

  /** Four clients, each round-robin over the ready instances with every session signed in so far. */
  function startLoad(): void {
    loadRunning = true;
    const client = async (n: number) => {
      for (let i = n; loadRunning; i++) {
        const nodes = [...ready];
        if (nodes.length === 0) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        const node = nodes[i % nodes.length];
        const token = tokens[i % tokens.length];
        sent++;
        try {
          const status = await call(node, token);
          if (status !== 200) failures.push(`#${node.index} ${status} (session ${i % tokens.length})`);
        } catch (err) {
          failures.push(`#${node.index} ${(err as Error).message}`);
        }
      }
    };
    load = Promise.all([0, 1, 2, 3].map(client)).then(() => undefined);
  }

  /** One instance at a time: out of the balancer, graceful stop, start with `env`, back in. */
  async function rollingRestart(env: Record<string, string>): Promise<void> {
    for (const node of cluster.nodes) {
      ready.delete(node);
      // Requests already sent to it finish (the drain); new ones go to the others.
      await new Promise((r) => setTimeout(r, 100));
      await node.stop();
      await node.start(env);
      ready.add(node);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  function rotateStoredSecrets(env: Record<string, string>): Promise<{ stdout: string; code: number }> {
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [ROTATE],
        { env: { PATH: process.env.PATH ?? '', ...cluster.db.env, NODE_ENV: 'test', ...env } },
        (err, stdout) => resolve({ stdout, code: err ? Number((err as { code?: number }).code ?? 1) : 0 }),
      );
    });
  }

  beforeAll(async () => {
    cluster = await ServiceCluster.start({
      label: 'key_rotation',
      dialect,
      size: SIZE,
      env: { JWT_SECRET: OLD.jwt, TENANT_ENCRYPTION_KEY: OLD.tenant },
    });
    for (const node of cluster.nodes) ready.add(node);
    // A stored secret written under the old key (inactive: the service does not connect to it).
    const ds = createDataSource(cluster.db.config);
    await ds.initialize();
    try {
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_connections')
        .values({
          con_code: 'erp_rotation',
          con_connection_string: encryptConnectionString(SECRET_URL, OLD.tenant),
          con_connection_type: 'postgresql',
          con_tenant_id: 1,
          con_status: 0,
          con_is_deleted: false,
        })
        .execute();
    } finally {
      await ds.destroy();
    }
  });

  afterAll(async () => {
    loadRunning = false;
    await load;
    await cluster?.close();
  });

  async function storedSecret(): Promise<string> {
    const ds = createDataSource(cluster.db.config);
    await ds.initialize();
    try {
      const [row] = await ds.query(
        `SELECT con_connection_string AS v FROM app_connections WHERE con_code = 'erp_rotation'`,
      );
      return String((row as { v: string }).v);
    } finally {
      await ds.destroy();
    }
  }

  it('should lose no request and sign no session out while every key is rotated', async () => {
    tokens.push(await signin(cluster.node(0)));
    startLoad();
    await new Promise((r) => setTimeout(r, 500));

    // 1. Every instance accepts the new keys while still signing and encrypting with the old ones.
    await rollingRestart({
      JWT_SECRET: OLD.jwt,
      JWT_SECRET_PREVIOUS: NEW.jwt,
      TENANT_ENCRYPTION_KEY: OLD.tenant,
      TENANT_ENCRYPTION_KEY_PREVIOUS: NEW.tenant,
    });
    // 2. The proxy encrypts tenant headers with the new key.
    proxyKey = NEW.tenant;
    await new Promise((r) => setTimeout(r, 300));
    // 3. Every instance signs and encrypts with the new keys; the old ones are still accepted.
    const step3 = {
      JWT_SECRET: NEW.jwt,
      JWT_SECRET_PREVIOUS: OLD.jwt,
      TENANT_ENCRYPTION_KEY: NEW.tenant,
      TENANT_ENCRYPTION_KEY_PREVIOUS: OLD.tenant,
    };
    await rollingRestart(step3);
    tokens.push(await signin(cluster.node(SIZE - 1)));
    // 4. The stored secrets are re-encrypted under the new key; a second run finds nothing to do.
    const rotated = await rotateStoredSecrets(step3);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/1 re-encrypted/);
    expect(rotated.stdout).not.toContain('s3cret');
    const again = await rotateStoredSecrets(step3);
    expect(again.stdout).toMatch(/0 re-encrypted, 1 already current/);
    const stored = await storedSecret();
    expect(storedKeyId(stored)).toBe(keyRing(Buffer.from(NEW.tenant, 'hex')).current.id);
    expect(decryptConnectionString(stored, NEW.tenant)).toBe(SECRET_URL);
    await new Promise((r) => setTimeout(r, 500));

    loadRunning = false;
    await load;
    // eslint-disable-next-line no-console
    console.log(
      `key rotation on ${dialect}: ${sent} requests through ${SIZE} instance(s), ${failures.length} failed`,
    );
    expect({ failures, bodies: lastBodies.slice(0, 3) }).toEqual({ failures: [], bodies: [] });
    expect(sent).toBeGreaterThan(100);
    // Both sessions, the one from before the rotation and the one from after, are still signed in.
    for (const node of cluster.nodes) for (const token of tokens) expect(await call(node, token)).toBe(200);
  });

  it('should refuse the old key once it is dropped, and keep what the new key made', async () => {
    await rollingRestart({
      JWT_SECRET: NEW.jwt,
      JWT_SECRET_PREVIOUS: '',
      TENANT_ENCRYPTION_KEY: NEW.tenant,
      TENANT_ENCRYPTION_KEY_PREVIOUS: '',
    });
    const [before, after] = tokens;
    for (const node of cluster.nodes) {
      expect(await call(node, after)).toBe(200);
      expect(await call(node, before)).toBe(401);
      expect(await call(node, after, OLD.tenant)).toBe(400);
    }
  });
});
