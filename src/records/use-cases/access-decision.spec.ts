import { AuthorizationError } from '../../common/errors/app-error';
import type { AuthUser } from '../../common/request-context';
import { DEMO_PROFILES } from '../../database/seed/demo-data';
import { normalisePolicy } from '../../profile/policy/policy.model';
import { buildEntityInfo, type RegistryRow } from '../../registry/registry-entity';
import type { RecordContext } from '../record-context';
import { AggregateRecords } from './aggregate-records';
import { CreateRecord } from './create-record';
import { DeleteRecord } from './delete-record';
import { ListRecords, PageRecords, ReadRecord } from './read-records';
import { UpdateRecord } from './update-record';
import { RecordHistory } from './record-history';
import { RestoreVersion } from './restore-record';
import { UndeleteRecord } from './undelete-record';
import { BulkRecords } from './bulk-records';
import { demoRegistryRow } from '../../../test/support/demo-registry';

/**
 * Every records use case takes the access decision itself (D47, issue 22): a caller the guards
 * would have refused is refused by the use case before it touches anything — no repository, cache
 * or profile is reached. The dependencies here throw on first use, so a use case that reads or
 * writes before it asks fails with their error instead of FORBIDDEN.
 *
 * The walk is exhaustive: every method of every use case class is either walked here or listed as
 * internal, so a new entry point cannot be added without its decision being tested.
 */

/** A dependency that must not be reached: any property read throws. */
const untouchable = new Proxy(
  {},
  {
    get(_, name) {
      throw new Error(`reached ${String(name)} before the access decision`);
    },
  },
) as never;

function registryRow(code: string): RegistryRow {
  return demoRegistryRow(code, { obj_id: 1 });
}

const customers = buildEntityInfo(registryRow('customers'), undefined);
const profile = DEMO_PROFILES.find((p) => p.objectCode === 'customers')!;
const fullPolicy = normalisePolicy({ modeCode: profile.mode, policy: JSON.stringify(profile.policy) });

const user = (permissions: string[]): AuthUser => ({
  userId: 7,
  email: 'someone@acme.test',
  tenantId: '1',
  roleId: 2,
  roles: ['SOMEONE'],
  permissions,
  jti: 'jti',
  exp: 0,
});

const ctxOf = (permissions: string[], policy = fullPolicy): RecordContext => ({
  tenantId: '1',
  user: user(permissions),
  requestId: 'access-decision',
  entity: customers,
  policy,
  profileId: 1,
});

const query = { filters: [], sort: [], page: { kind: 'offset' as const, limit: 10, skip: 0 } };
const keyset = { filters: [], sort: [], page: { kind: 'keyset' as const, limit: 10 } };

type Call = (ctx: RecordContext) => unknown;

/** Each entry point of each use case, with the action it must be refused without. */
const WALK: Record<string, { internal: string[]; calls: Record<string, [string, Call]> }> = {
  ReadRecord: {
    internal: [],
    calls: { execute: ['read', (ctx) => new ReadRecord(untouchable).execute(ctx, 1)] },
  },
  ListRecords: {
    internal: ['keysOf', 'pageKey', 'hashOf', 'store', 'loadSerialized', 'load'],
    calls: {
      execute: ['read', (ctx) => new ListRecords(untouchable, untouchable).execute(ctx, query)],
      executeSerialized: [
        'read',
        (ctx) => new ListRecords(untouchable, untouchable).executeSerialized(ctx, query),
      ],
    },
  },
  PageRecords: {
    internal: [],
    calls: {
      page: ['read', (ctx) => new PageRecords(untouchable).page(ctx, keyset)],
      stream: ['read', (ctx) => new PageRecords(untouchable).stream(ctx, keyset, 10).next()],
      count: ['read', (ctx) => new PageRecords(untouchable).count(ctx, query)],
    },
  },
  AggregateRecords: {
    internal: ['filtered'],
    calls: {
      totals: ['read', (ctx) => new AggregateRecords(untouchable).totals(ctx, query, [])],
      groups: [
        'read',
        (ctx) => new AggregateRecords(untouchable).groups(ctx, query, { field: 'tier' }, [], 10),
      ],
    },
  },
  CreateRecord: {
    internal: ['answer'],
    calls: {
      execute: ['create', (ctx) => new CreateRecord(untouchable).execute(ctx, { name: 'x' })],
      prepare: [
        'create',
        (ctx) => new CreateRecord(untouchable).prepare(ctx, { name: 'x', email: 'x@acme.test' }),
      ],
      inTransaction: [
        'create',
        (ctx) => new CreateRecord(untouchable).inTransaction(ctx, untouchable, untouchable),
      ],
    },
  },
  UpdateRecord: {
    internal: ['answer'],
    calls: {
      execute: ['update', (ctx) => new UpdateRecord(untouchable).execute(ctx, 1, { name: 'x' }, { ms: 1 })],
      prepare: ['update', (ctx) => new UpdateRecord(untouchable).prepare(ctx, 1, { name: 'x' }, { ms: 1 })],
      preload: ['update', (ctx) => new UpdateRecord(untouchable).preload(ctx, untouchable, [1])],
      inTransaction: [
        'update',
        (ctx) => new UpdateRecord(untouchable).inTransaction(ctx, untouchable, untouchable),
      ],
    },
  },
  DeleteRecord: {
    internal: ['assertMayDelete'],
    calls: {
      execute: [
        'delete',
        (ctx) => new DeleteRecord(untouchable, untouchable, untouchable).execute(ctx, 1, { cascade: false }),
      ],
      // Checks only: once allowed it reaches nothing and answers nothing.
      prepare: [
        'delete',
        (ctx) => {
          new DeleteRecord(untouchable, untouchable, untouchable).prepare(ctx, 1);
          throw new Error('is not a function: nothing to reach after the decision');
        },
      ],
      inTransaction: [
        'delete',
        (ctx) =>
          new DeleteRecord(untouchable, untouchable, untouchable).inTransaction(ctx, untouchable, 1, {
            cascade: false,
          }),
      ],
    },
  },
  BulkRecords: {
    internal: ['prepareAll', 'prepare', 'writeRows'],
    calls: {
      execute: [
        'update',
        (ctx) =>
          new BulkRecords(untouchable, untouchable, untouchable, untouchable).execute(ctx, {
            operation: 'update',
            rows: [{ id: 1, body: { name: 'x' }, expected: { ms: 1 } }],
            cascade: false,
            allOrNone: false,
          }),
      ],
      session: [
        'create',
        (ctx) =>
          new BulkRecords(untouchable, untouchable, untouchable, untouchable).session(
            ctx,
            { operation: 'create', cascade: false, allOrNone: true },
            async (write) => {
              await write([{ body: { name: 'x' } }]);
            },
          ),
      ],
    },
  },
  RecordHistory: {
    internal: [],
    calls: {
      list: [
        'read',
        (ctx) => new RecordHistory(untouchable, untouchable).list(ctx, 1, { limit: 1, skip: 0 }),
      ],
      atVersion: ['read', (ctx) => new RecordHistory(untouchable, untouchable).atVersion(ctx, 1, 1)],
      stored: ['read', (ctx) => new RecordHistory(untouchable, untouchable).stored(ctx, 1, 1)],
      assertVisible: ['read', (ctx) => new RecordHistory(untouchable, untouchable).assertVisible(ctx, 1)],
    },
  },
  RestoreVersion: {
    internal: [],
    calls: {
      execute: [
        'update',
        (ctx) => new RestoreVersion(untouchable, untouchable).execute(ctx, 1, 1, { ms: 1 }),
      ],
    },
  },
  UndeleteRecord: {
    internal: ['undeleteSet', 'assertMayDelete', 'membersOf', 'uniqueLockNames', 'missingReferences'],
    calls: {
      execute: [
        'delete',
        (ctx) =>
          new UndeleteRecord(untouchable, untouchable, untouchable, untouchable, untouchable).execute(ctx, 1),
      ],
    },
  },
};

const CLASSES: Record<string, { prototype: object }> = {
  ReadRecord,
  ListRecords,
  PageRecords,
  AggregateRecords,
  CreateRecord,
  UpdateRecord,
  DeleteRecord,
  RecordHistory,
  RestoreVersion,
  UndeleteRecord,
  BulkRecords,
};

async function refusal(call: Call, ctx: RecordContext): Promise<unknown> {
  try {
    await call(ctx);
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('the access decision inside the records use cases', () => {
  it.each(Object.keys(CLASSES))('%s: every method is walked below or named internal', (name) => {
    const methods = Object.getOwnPropertyNames(CLASSES[name].prototype).filter((m) => m !== 'constructor');
    const known = [...Object.keys(WALK[name].calls), ...WALK[name].internal];
    expect(methods.sort()).toEqual(known.sort());
  });

  const cases = Object.entries(WALK).flatMap(([cls, { calls }]) =>
    Object.entries(calls).map(([method, [action, call]]) => [`${cls}.${method}`, action, call] as const),
  );

  it.each(cases)('%s should refuse a role without %s before it reaches anything', async (_, action, call) => {
    const err = await refusal(call, ctxOf(['read:dataview', 'export:dataview']));
    expect(err).toBeInstanceOf(AuthorizationError);
    expect((err as AuthorizationError).message).toBe(`Permission ${action}:customers required`);
  });

  it.each(cases)(
    '%s should refuse what the profile does not allow, whatever the role',
    async (_, action, call) => {
      const closed = normalisePolicy({
        modeCode: 'FULL',
        policy: JSON.stringify({
          ...profile.policy,
          permissions: { read: false, write: false, delete: false, export: false, approve: false },
        }),
      });
      const err = await refusal(call, ctxOf(['*:*'], closed));
      expect(err).toBeInstanceOf(AuthorizationError);
      expect((err as AuthorizationError).message).toBe(`The profile of customers does not allow ${action}`);
    },
  );

  it.each(cases)(
    '%s should go past the decision for a role and profile that allow it',
    async (_, __, call) => {
      const err = await refusal(call, ctxOf(['*:*']));
      // Allowed: it goes on to its dependencies, which are not there in this test.
      expect(err).not.toBeInstanceOf(AuthorizationError);
      expect(String(err)).toMatch(/before the access decision|is not a function|Cannot read/);
    },
  );
});
