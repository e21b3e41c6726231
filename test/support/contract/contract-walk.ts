import { request as httpRequest } from 'node:http';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { DataSource } from 'typeorm';
import { copyEntityConfig } from '../entity-fixtures';
import type { TestApp } from '../test-app';

/** Helpers of test/e2e/contract.e2e-spec.ts: requests, fault injection, configurations. */

type Json = Record<string, any>;

const LOCK_TIMEOUT =
  'a unique-value lock held past WRITE_LOCK_TIMEOUT_MS on a server dialect (write-locks.e2e-spec), ' +
  'or a unique index hit by a row written outside the service';

/**
 * Documented statuses the walk does not produce, and why: each is a real answer of another set-up
 * (dialect, concurrency) that the suite named in the reason covers.
 */
export const UNREACHABLE: Record<string, string> = {
  ...Object.fromEntries(
    ['createRecord', 'createCustomer', 'createUser', 'createRole'].map((op) => [`${op} 409`, LOCK_TIMEOUT]),
  ),
  // An injected request waits for the end of its answer, and a live stream never ends; its answer
  // is hijacked, so no hook of the recorder sees it either. live-changes.e2e-spec reads it over HTTP.
  'streamRecordChanges 200':
    'a text/event-stream that stays open (hijacked reply): live-changes.e2e-spec reads it over a real fetch stream',
  'streamDataviewChanges 200':
    'a text/event-stream that stays open (hijacked reply): live-changes.e2e-spec reads it over a real fetch stream',
};

/** A request carrying this header fails in a Fastify hook: the 500 envelope of any route. */
export const FAULT = 'x-contract-fault';

export function installFault(app: NestFastifyApplication): void {
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('preHandler', (request, _reply, done) => {
      done(request.headers[FAULT] ? new Error('fault injected by the contract test') : undefined);
    });
}

/** An injected request: an object payload goes as JSON, a string as it is. */
export async function send(
  t: TestApp,
  method: string,
  url: string,
  headers: Record<string, string> = {},
  payload?: unknown,
): Promise<{ status: number; json: Json; headers: Json }> {
  const json = payload !== undefined && typeof payload !== 'string';
  const res = await t.app.inject({
    method: method as 'GET',
    url,
    headers: json ? { ...headers, 'content-type': 'application/json' } : headers,
    ...(payload === undefined ? {} : { payload: json ? JSON.stringify(payload) : payload }),
  });
  let body: Json = {};
  try {
    body = res.json();
  } catch {
    body = {};
  }
  return { status: res.statusCode, json: body, headers: res.headers };
}

/** A GET over a real socket: what Node itself answers (431) never reaches Fastify or inject. */
export function rawGet(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Json; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** An entity of a database type the service cannot serve (D26) and a dataview on it: 501s. */
export async function registerUnservableEntity(
  ds: DataSource,
  code: string,
  dataview: string,
): Promise<void> {
  await copyEntityConfig(ds, 'customers', code, { registry: { obj_db_type: 'mongodb' } });
  const [grid] = await ds.query<Json[]>(
    `SELECT * FROM app_dataview_configs WHERE dvc_code = 'customers_grid'`,
  );
  const config = JSON.parse(grid.dvc_config as string) as Json;
  config.source.entityCode = code;
  const { dvc_id: _id, ...row } = grid;
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_dataview_configs')
    .values({ ...row, dvc_code: dataview, dvc_source_entity: code, dvc_config: JSON.stringify(config) })
    .execute();
}

/** Roles writable (FULL mode) and users deletable: what a tenant's own profiles may say. */
export async function openDemoProfiles(ds: DataSource): Promise<void> {
  await ds.query(`UPDATE app_object_profiles SET prf_mode_code = 'FULL' WHERE prf_code = 'roles'`);
  const [users] = await ds.query<Json[]>(
    `SELECT prf_policy FROM app_object_profiles WHERE prf_code = 'users'`,
  );
  const policy = JSON.parse(users.prf_policy as string) as Json;
  policy.permissions = { ...policy.permissions, delete: true };
  await ds
    .createQueryBuilder()
    .update('app_object_profiles')
    .set({ prf_policy: JSON.stringify(policy) })
    .where('prf_code = :code', { code: 'users' })
    .execute();
}
