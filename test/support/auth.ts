import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DEV_DEMO_PASSWORD } from '../../src/database/seed/demo-data';
import { encryptTenantHeader } from '../../src/tenant/tenant-header.crypto';
import { TEST_SECRETS } from './test-database';

export const DEMO_PASSWORD = DEV_DEMO_PASSWORD;
export const TENANT = { acme: '1', globex: '2', initech: '3' } as const;

/** A valid x-tenant-id for the test key. */
export function tenantHeader(tenantId: string | number, timestamp?: number): string {
  return encryptTenantHeader(tenantId, TEST_SECRETS.TENANT_ENCRYPTION_KEY, timestamp);
}

export async function signin(
  app: NestFastifyApplication,
  tenantId: string,
  email: string,
  password = DEMO_PASSWORD,
): Promise<{ status: number; body: any; token: string }> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/signin',
    headers: { 'x-tenant-id': tenantHeader(tenantId) },
    payload: { email_id: email, password },
  });
  const body = res.json();
  return { status: res.statusCode, body, token: body?.data?.token ?? '' };
}

export function authHeaders(tenantId: string, token: string): Record<string, string> {
  return { 'x-tenant-id': tenantHeader(tenantId), authorization: `Bearer ${token}` };
}
