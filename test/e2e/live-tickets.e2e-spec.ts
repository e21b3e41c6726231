import { ChangeTicketsService } from '../../src/auth/change-tickets.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { capturedLogLines } from '../support/log-capture';
import { Stream, type Rec } from '../support/sse-stream';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

jest.mock('../../src/common/logging', () =>
  jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture(),
);
const mockLogLines = capturedLogLines;

/**
 * Change-stream tickets (D55): a signed-in client takes a single-use ticket and opens a stream with
 * `?ticket=` and no headers; the ticket carries tenant and user, is refused once used, expired or
 * forged (401 TOKEN_INVALID), and never appears in a log line.
 */
describe('live change tickets (D55)', () => {
  let t: TestApp;
  let base: string;
  const token: Record<string, string> = {};
  const streams: Stream[] = [];

  const headersOf = (who: 'admin' | 'viewer' | 'globex') =>
    authHeaders(who === 'globex' ? TENANT.globex : TENANT.acme, token[who]);

  const ticketOf = async (who: 'admin' | 'viewer' | 'globex'): Promise<string> => {
    const res = await fetch(`${base}/api/v1/changes/tickets`, { method: 'POST', headers: headersOf(who) });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Rec;
    expect(body.success).toBe(true);
    expect(body.data.expiresIn).toBe(60);
    expect(typeof body.data.ticket).toBe('string');
    return body.data.ticket as string;
  };

  const openWith = async (path: string, ticket: string, headers: Record<string, string> = {}) => {
    const s = await new Stream().open(`${base}${path}?ticket=${encodeURIComponent(ticket)}`, headers);
    streams.push(s);
    return s;
  };

  const create = async (who: 'admin' | 'globex', name: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: headersOf(who),
      payload: { name, email: `${name.replace(/\W/g, '')}-${Date.now()}@x.example` },
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as Rec;
  };

  const refusal = async (url: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${url}`, { headers });
    const body = (await res.json()) as Rec;
    return { status: res.status, code: body.error?.code as string | undefined };
  };

  beforeAll(async () => {
    t = await startTestApp({ label: 'live-tickets', env: { LOG_LEVEL: 'info' } });
    await t.app.listen(0, '127.0.0.1');
    const address = t.app.getHttpServer().address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should refuse a ticket without a token', async () => {
    const res = await fetch(`${base}/api/v1/changes/tickets`, { method: 'POST', headers: authHeaders(TENANT.acme, '') });
    expect(res.status).toBe(401);
  });

  it('should open a stream with only ?ticket=, bound to the ticket’s tenant and user', async () => {
    const ticket = await ticketOf('viewer');
    const acme = await openWith('/api/v1/customers/changes', ticket);
    expect(acme.status).toBe(200);
    expect(acme.contentType).toMatch(/^text\/event-stream/);
    // Another tenant's headers beside it change nothing: the ticket names its tenant.
    const globexTicket = await ticketOf('globex');
    const globex = await openWith('/api/v1/customers/changes', globexTicket, headersOf('viewer'));
    expect(globex.status).toBe(200);
    const mine = await create('admin', 'Ticket acme');
    const theirs = await create('globex', 'Ticket globex');
    await waitFor(async () => acme.data().length >= 1 && globex.data().length >= 1, 10_000);
    expect(acme.data().map((e) => e.id as number)).toEqual([mine.id]);
    expect(globex.data().map((e) => e.id as number)).toEqual([theirs.id]);
    // The viewer's read: masked as the viewer sees it.
    expect(acme.data()[0].row.name).toBe('Ticket acme');
    expect(acme.data()[0].row).not.toHaveProperty('internal_notes');
  });

  it('should open a dataview stream with a ticket', async () => {
    const grid = await openWith('/api/v1/dataviews/customers_grid/changes', await ticketOf('viewer'));
    expect(grid.status).toBe(200);
    const created = await create('admin', 'Ticket grid');
    await waitFor(async () => grid.data().length >= 1, 10_000);
    expect(grid.data()[0]).toMatchObject({ event: 'created', id: created.id });
  });

  it('should refuse a used, forged or expired ticket with 401 TOKEN_INVALID', async () => {
    const ticket = await ticketOf('admin');
    expect((await openWith('/api/v1/customers/changes', ticket)).status).toBe(200);
    expect(await refusal(`/api/v1/customers/changes?ticket=${ticket}`)).toEqual({ status: 401, code: 'TOKEN_INVALID' });
    const forged = `${ticket.slice(0, -4)}AAAA`;
    expect(await refusal(`/api/v1/customers/changes?ticket=${forged}`)).toEqual({ status: 401, code: 'TOKEN_INVALID' });
    expect(await refusal('/api/v1/customers/changes?ticket=short')).toEqual({ status: 401, code: 'TOKEN_INVALID' });
    expect(await refusal('/api/v1/customers/changes?ticket=')).toEqual({ status: 401, code: 'TOKEN_INVALID' });
    // A ticket older than 60 s is refused even while the store still holds it.
    const old = await ticketOf('admin');
    await expect(t.app.get(ChangeTicketsService).redeem(old, Date.now() + 61_000)).rejects.toMatchObject({
      code: 'TOKEN_INVALID',
    });
    // A ticket is only for the changes routes: elsewhere the headers are still required.
    const other = await ticketOf('admin');
    expect((await refusal(`/api/v1/customers?ticket=${other}`)).status).toBe(400);
  });

  it('should never write the ticket into a log line', async () => {
    const from = mockLogLines.length;
    const ticket = await ticketOf('admin');
    const s = await openWith('/api/v1/customers/changes', ticket);
    expect(s.status).toBe(200);
    s.close();
    const refused = await refusal(`/api/v1/customers/changes?ticket=${ticket}`);
    expect(refused.status).toBe(401);
    const access = (): Rec[] =>
      mockLogLines
        .slice(from)
        .map((l) => JSON.parse(l) as Rec)
        .filter((l) => typeof l.req?.url === 'string' && l.req.url.includes('/changes?'));
    // The refusal's access line (a stream itself is answered outside Fastify's reply: no line).
    await waitFor(async () => access().length >= 1, 5_000);
    expect(mockLogLines.slice(from).join('\n')).not.toContain(ticket);
    expect(access().map((l) => l.res?.statusCode as number)).toEqual([401]);
    for (const line of access()) {
      expect(line.req.url).toBe('/api/v1/customers/changes?ticket=[redacted]');
      expect(line.msg ?? '').not.toContain(ticket);
    }
  });
});
