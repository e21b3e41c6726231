import jwt from 'jsonwebtoken';
import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { CollectionEventsService } from '../../src/cache/collection-events';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

type Json = Record<string, any>;
const VIEWER_PERMISSIONS = ['read:entity', 'read:dataview', 'export:dataview', 'read:workflow'];

/**
 * Issue 9, finding 4: the permissions JwtAuthGuard and the entity guards enforce are the role's
 * current ones (the user state the guard caches), not the copy the token got at sign-in. A role's
 * change reaches tokens already issued on the next request after its collection event (D37); a
 * user moved to another role through the users entity likewise.
 */
describe('Role changes reach existing tokens (D9, D37; issue 9 finding 4)', () => {
  let t: TestApp;
  let ds: DataSource;
  let cache: CacheService;
  let rootToken: string;
  const roleIds: Record<string, number> = {};

  beforeAll(async () => {
    t = await startTestApp({ label: 'role-permissions' });
    ds = t.app.get(DatabaseService).dataSource;
    cache = t.app.get(CacheService);
    rootToken = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    // A role of acme without read:entity, for the move through the users entity.
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_roles')
      .values({
        rol_tenant_id: 1,
        rol_code: 'WORKFLOW_READER',
        rol_permissions: JSON.stringify(['read:workflow']),
        rol_status: 1,
        rol_is_deleted: 0,
      })
      .execute();
    const rows = await ds
      .createQueryBuilder()
      .select(['r.rol_id AS id', 'r.rol_code AS code'])
      .from('app_roles', 'r')
      .where('r.rol_tenant_id = :tenantId', { tenantId: 1 })
      .getRawMany<{ id: unknown; code: string }>();
    for (const r of rows) roleIds[r.code] = Number(r.id);
  });

  afterAll(async () => {
    await t?.close();
  });

  const call = (
    method: 'GET' | 'PUT',
    url: string,
    token: string,
    payload?: Json,
    tenantId: string = TENANT.acme,
  ) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenantId, token),
      ...(payload === undefined ? {} : { payload }),
    });
  const answer = async (res: Promise<{ statusCode: number; json(): any }>) => {
    const r = await res;
    return { status: r.statusCode, code: r.statusCode < 400 ? undefined : r.json().error?.code };
  };
  const listCustomers = (token: string) => answer(call('GET', '/api/v1/customers?limit=1', token));
  const claimsOf = (token: string) => jwt.decode(token) as jwt.JwtPayload;
  /**
   * The claims of `token` in a token issued now (after any revocation of the user's older tokens):
   * its role claims still say what they said at sign-in.
   */
  const reissued = (token: string) => {
    const nowMs = Date.now();
    const now = Math.floor(nowMs / 1000);
    return jwt.sign(
      { ...claimsOf(token), jti: randomUUID(), iat: now, iat_ms: nowMs, exp: now + 600 },
      TEST_SECRETS.JWT_SECRET,
      { algorithm: 'HS256' },
    );
  };
  const setPermissions = (roleId: number, permissions: string[]) =>
    ds
      .createQueryBuilder()
      .update('app_roles')
      .set({ rol_permissions: JSON.stringify(permissions) })
      .where('rol_id = :roleId', { roleId })
      .execute();
  /** What the entity write path publishes after a roles write (D37). */
  const publishRoleEvent = (roleId: number) =>
    t.app.get(CollectionEventsService).publishAll([
      {
        type: 'updated',
        entityCode: 'roles',
        tenantId: TENANT.acme,
        id: roleId,
        at: new Date().toISOString(),
      },
    ]);
  const stateCached = async (tenantId: string, userId: number) =>
    (await cache.getJson(cache.keys.userState(tenantId, userId))) !== undefined;

  describe("a change of the role's permissions", () => {
    it("should take read:entity from the VIEWER's existing token once the roles event is heard, and give it back", async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test');
      const viewerId = Number(viewer.body.data.user_id);
      const globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
      expect(claimsOf(viewer.token).permissions).toContain('read:entity');
      expect(await listCustomers(viewer.token)).toEqual({ status: 200, code: undefined });
      expect((await call('GET', '/api/v1/auth/profile', globex, undefined, TENANT.globex)).statusCode).toBe(
        200,
      );
      expect(await stateCached(TENANT.acme, viewerId)).toBe(true);

      // Demoted: the row changes; until the event, the cached state (30 s at most) still answers.
      await setPermissions(
        roleIds.VIEWER,
        VIEWER_PERMISSIONS.filter((p) => p !== 'read:entity'),
      );
      expect(await listCustomers(viewer.token)).toEqual({ status: 200, code: undefined });
      await publishRoleEvent(roleIds.VIEWER);
      await waitFor(async () => !(await stateCached(TENANT.acme, viewerId)), 5000, 10);
      expect(await listCustomers(viewer.token)).toEqual({ status: 403, code: 'FORBIDDEN' });
      // Only acme's entries went: the other tenant's user state is still cached.
      expect(await stateCached(TENANT.globex, Number(claimsOf(globex).user_id))).toBe(true);
      // The profile answers the role's current permissions; the token still claims the old ones.
      const profile = (await call('GET', '/api/v1/auth/profile', viewer.token)).json().data;
      expect(profile).toMatchObject({ role_id: roleIds.VIEWER, role_code: 'VIEWER', roles: ['VIEWER'] });
      expect(profile.permissions).toEqual(VIEWER_PERMISSIONS.filter((p) => p !== 'read:entity'));
      expect(claimsOf(viewer.token).permissions).toContain('read:entity');

      // Promoted back: the same path gives it back.
      await setPermissions(roleIds.VIEWER, VIEWER_PERMISSIONS);
      await publishRoleEvent(roleIds.VIEWER);
      await waitFor(async () => !(await stateCached(TENANT.acme, viewerId)), 5000, 10);
      expect(await listCustomers(viewer.token)).toEqual({ status: 200, code: undefined });
    });

    it('should refuse everything the role no longer grants once the role is deactivated', async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test');
      expect(await listCustomers(viewer.token)).toEqual({ status: 200, code: undefined });
      const setStatus = (status: number) =>
        ds
          .createQueryBuilder()
          .update('app_roles')
          .set({ rol_status: status })
          .where('rol_id = :roleId', { roleId: roleIds.VIEWER })
          .execute();
      await setStatus(0);
      await publishRoleEvent(roleIds.VIEWER);
      await waitFor(
        async () => !(await stateCached(TENANT.acme, Number(viewer.body.data.user_id))),
        5000,
        10,
      );
      expect(await listCustomers(viewer.token)).toEqual({ status: 403, code: 'FORBIDDEN' });
      const profile = (await call('GET', '/api/v1/auth/profile', viewer.token)).json().data;
      expect(profile).toMatchObject({ role_code: null, roles: [], permissions: [] });
      await setStatus(1);
      await publishRoleEvent(roleIds.VIEWER);
      await waitFor(async () => (await listCustomers(viewer.token)).status === 200, 5000, 10);
    });
  });

  describe('a user moved to another role through PUT /api/v1/users', () => {
    const readUser = async (id: number) =>
      (await call('GET', `/api/v1/users/${id}`, rootToken)).json().data as Json;
    const moveTo = async (id: number, roleId: number) => {
      const res = await call('PUT', `/api/v1/users/${id}`, rootToken, {
        ...(await readUser(id)),
        role_id: roleId,
      });
      expect({ status: res.statusCode, roleId: res.json().data?.role_id }).toEqual({ status: 200, roleId });
    };

    it("should be enforced with the new role's permissions on the next request", async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test');
      const viewerId = Number(viewer.body.data.user_id);
      expect(await listCustomers(viewer.token)).toEqual({ status: 200, code: undefined });
      try {
        // Demoted to a role without read:entity.
        await moveTo(viewerId, roleIds.WORKFLOW_READER);
        // A token whose claims still say VIEWER, issued after the move (not touched by any
        // revocation of older tokens): enforced with the new role.
        const afterDemotion = reissued(viewer.token);
        expect(claimsOf(afterDemotion).permissions).toContain('read:entity');
        expect(await listCustomers(afterDemotion)).toEqual({ status: 403, code: 'FORBIDDEN' });
        // The token issued before the move is refused either way: with the new role's permissions,
        // or as revoked once a role change revokes the user's older tokens.
        expect([
          { status: 403, code: 'FORBIDDEN' },
          { status: 401, code: 'TOKEN_REVOKED' },
        ]).toContainEqual(await listCustomers(viewer.token));
        expect((await call('GET', '/api/v1/auth/profile', afterDemotion)).json().data).toMatchObject({
          role_id: roleIds.WORKFLOW_READER,
          role_code: 'WORKFLOW_READER',
          permissions: ['read:workflow'],
        });

        // Promoted to ADMIN: update:entity, which VIEWER never had, with VIEWER claims.
        await moveTo(viewerId, roleIds.ADMIN);
        const afterPromotion = reissued(viewer.token);
        expect(claimsOf(afterPromotion).roles).toEqual(['VIEWER']);
        const customer = (await call('GET', '/api/v1/customers/1', afterPromotion)).json().data as Json;
        expect(await answer(call('PUT', '/api/v1/customers/1', afterPromotion, customer))).toEqual({
          status: 200,
          code: undefined,
        });
        // Back to VIEWER: the write is refused again.
        await moveTo(viewerId, roleIds.VIEWER);
        expect(await answer(call('PUT', '/api/v1/customers/1', reissued(viewer.token), customer))).toEqual({
          status: 403,
          code: 'FORBIDDEN',
        });
      } finally {
        if ((await readUser(viewerId)).role_id !== roleIds.VIEWER) await moveTo(viewerId, roleIds.VIEWER);
      }
    });
  });
});
