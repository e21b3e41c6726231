import { tenantHeader, TENANT } from '../support/auth';
import { ServiceCluster } from '../support/service-cluster';
import { Stream, type Rec } from '../support/sse-stream';
import { waitFor } from '../support/test-app';
import { testDialect } from '../support/test-database';

/**
 * Live changes on several service processes sharing one database and Redis (D55): a write on
 * process A reaches a stream open on process B (the outbox signal travels through Redis), and a
 * ticket taken on A opens a stream on B (tickets live in the shared cache) — once: the same ticket
 * is then refused on A.
 *
 * PostgreSQL and MariaDB: 2 processes. SQLite: 1 (several processes on one SQLite file are not a
 * supported set-up, as in the other cluster tests); there A and B are the same process, still on Redis.
 */
const dialect = testDialect();
const SIZE = dialect === 'sqlite' ? 1 : 2;

jest.setTimeout(180_000);

describe(`Live changes on ${SIZE} service process(es), ${dialect} + Redis (D55)`, () => {
  let cluster: ServiceCluster;
  let token = '';
  const streams: Stream[] = [];
  const A = () => cluster.node(0);
  const B = () => cluster.node(SIZE - 1);

  beforeAll(async () => {
    cluster = await ServiceCluster.start({ label: 'live-cluster', dialect, size: SIZE });
    token = await cluster.signin('admin@acme.test');
  });

  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  afterAll(async () => {
    await cluster?.close();
  });

  const create = async (name: string): Promise<Rec> => {
    const res = await A().client.post('/api/v1/customers', { name, email: `${name.replace(/\W/g, '')}-${Date.now()}@live.example` });
    expect(res.status).toBe(201);
    return res.body.data as Rec;
  };

  it('should send a write on A to a stream open on B', async () => {
    const s = await new Stream().open(`${B().client.baseUrl}/api/v1/customers/changes`, {
      'x-tenant-id': tenantHeader(TENANT.acme),
      authorization: `Bearer ${token}`,
    });
    streams.push(s);
    expect(s.status).toBe(200);
    const created = await create('Cluster live');
    await waitFor(async () => s.data().length >= 1, 15_000);
    expect(s.data()[0]).toMatchObject({ event: 'created', id: created.id });
    expect((s.data()[0].row as Rec).name).toBe('Cluster live');
  });

  it('should open a stream on B with a ticket taken on A, once', async () => {
    const issued = await A().client.post('/api/v1/changes/tickets', {});
    expect(issued.status).toBe(201);
    const ticket = String(issued.body.data.ticket);
    const s = await new Stream().open(`${B().client.baseUrl}/api/v1/customers/changes?ticket=${ticket}`, {});
    streams.push(s);
    expect(s.status).toBe(200);
    const created = await create('Cluster ticket');
    await waitFor(async () => s.data().some((e) => e.id === created.id), 15_000);
    const again = await fetch(`${A().client.baseUrl}/api/v1/customers/changes?ticket=${ticket}`);
    expect(again.status).toBe(401);
    expect(((await again.json()) as Rec).error.code).toBe('TOKEN_INVALID');
  });
});
