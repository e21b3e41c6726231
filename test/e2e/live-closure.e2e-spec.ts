import { ChangeTicketsService } from '../../src/auth/change-tickets.service';
import { TokenService } from '../../src/auth/token.service';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { Stream, type Rec } from '../support/sse-stream';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

/**
 * D55: a stream lives as long as its token would be admitted: it ends when the token is revoked
 * (logout), when the user's role or what the role grants changes, when the user is deactivated,
 * and when the token expires — for a stream opened with a ticket, the token the ticket was taken
 * with. Ending means the HTTP stream closes (the client sees its end).
 */
describe('live change streams end with their token (D55)', () => {
  let t: TestApp;
  let base: string;
  let root: string;
  const streams: Stream[] = [];
  // A recheck runs every RECHECK_MS (5 s) and soon after a users/roles write.
  const ENDS_WITHIN = 12_000;

  const call = (method: 'GET' | 'PUT' | 'POST', url: string, token: string, payload?: Rec) =>
    t.app.inject({ method, url, headers: authHeaders(TENANT.acme, token), ...(payload ? { payload } : {}) });

  const openWithToken = async (token: string) => {
    const s = await new Stream().open(`${base}/api/v1/customers/changes`, authHeaders(TENANT.acme, token));
    streams.push(s);
    expect(s.status).toBe(200);
    return s;
  };

  const openWithTicket = async (ticket: string) => {
    const s = await new Stream().open(`${base}/api/v1/customers/changes?ticket=${ticket}`, {});
    streams.push(s);
    expect(s.status).toBe(200);
    return s;
  };

  const ticketOf = async (token: string): Promise<string> => {
    const res = await call('POST', '/api/v1/changes/tickets', token);
    expect(res.statusCode).toBe(201);
    return res.json().data.ticket as string;
  };

  const fresh = async (email: string) => (await signin(t.app, TENANT.acme, email)).token;

  beforeAll(async () => {
    t = await startTestApp({ label: 'live-closure' });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
    root = await fresh('root@acme.test');
  });

  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should end a stream when its token is revoked, and leave the user’s other tokens’ streams open', async () => {
    const token = await fresh('admin@acme.test');
    const other = await fresh('admin@acme.test');
    const revoked = await openWithToken(token);
    const kept = await openWithToken(other);
    expect((await call('POST', '/api/v1/auth/logout', token)).statusCode).toBe(200);
    await waitFor(async () => revoked.ended, ENDS_WITHIN);
    // Checked at least once more since: the other token's stream is still open.
    await t.app.get(LiveChangesService).recheck(TENANT.acme);
    expect(kept.ended).toBe(false);
  });

  it('should end a ticket’s stream when the token the ticket was taken with is revoked', async () => {
    const token = await fresh('admin@acme.test');
    const s = await openWithTicket(await ticketOf(token));
    expect((await call('POST', '/api/v1/auth/logout', token)).statusCode).toBe(200);
    await waitFor(async () => s.ended, ENDS_WITHIN);
  });

  it('should end a ticket’s stream when the token the ticket was taken with expires', async () => {
    const token = await fresh('admin@acme.test');
    const claims = t.app.get(TokenService).verify(token);
    const { issuedAtMs, ...user } = claims;
    // A ticket for a token that expires in two seconds.
    const { ticket } = await t.app
      .get(ChangeTicketsService)
      .issue({ ...user, exp: Math.floor(Date.now() / 1000) + 2 }, issuedAtMs);
    const s = await openWithTicket(ticket);
    const opened = Date.now();
    await waitFor(async () => s.ended, 6_000);
    expect(Date.now() - opened).toBeGreaterThanOrEqual(500);
  });

  it('should end the streams of a user whose role changes', async () => {
    const viewer = await fresh('viewer@acme.test');
    const s = await openWithToken(viewer);
    const withTicket = await openWithTicket(await ticketOf(viewer));
    const me = (await call('GET', '/api/v1/auth/profile', viewer)).json().data as Rec;
    const user = (await call('GET', `/api/v1/users/${me.user_id}`, root)).json().data as Rec;
    const roles = (await call('GET', '/api/v1/roles?limit=50', root)).json().data.records as Rec[];
    const admin = roles.find((r) => r.code === 'ADMIN')!;
    const moved = await call('PUT', `/api/v1/users/${user.id}`, root, { ...user, role_id: admin.id });
    expect(moved.statusCode).toBe(200);
    await waitFor(async () => s.ended && withTicket.ended, ENDS_WITHIN);
    // Back to the old role for the next test, with a new token.
    const back = await call('PUT', `/api/v1/users/${user.id}`, root, { ...(moved.json().data as Rec), role_id: user.role_id });
    expect(back.statusCode).toBe(200);
    await openWithToken(await fresh('viewer@acme.test'));
  });

  it('should end the streams of a user who is deactivated, and refuse a new one', async () => {
    const viewer = await fresh('viewer@acme.test');
    const s = await openWithToken(viewer);
    const me = (await call('GET', '/api/v1/auth/profile', viewer)).json().data as Rec;
    const user = (await call('GET', `/api/v1/users/${me.user_id}`, root)).json().data as Rec;
    const off = await call('PUT', `/api/v1/users/${user.id}`, root, { ...user, status: 0 });
    expect(off.statusCode).toBe(200);
    await waitFor(async () => s.ended, ENDS_WITHIN);
    const again = await fetch(`${base}/api/v1/customers/changes`, { headers: authHeaders(TENANT.acme, viewer) });
    expect(again.status).toBe(401);
    expect(((await again.json()) as Rec).error.code).toBe('TOKEN_INVALID');
  });
});
