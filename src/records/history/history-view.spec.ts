import { DEMO_ENTITIES, DEMO_PROFILES } from '../../database/seed/demo-data';
import { normalisePolicy } from '../../profile/policy/policy.model';
import { buildEntityInfo, type RegistryRow } from '../../registry/registry-entity';
import type { AuditRow } from './history.repository';
import { presentEntry } from './history-view';

function entityOf(code: string) {
  const e = DEMO_ENTITIES.find((x) => x.code === code)!;
  const row: RegistryRow = {
    obj_id: 1,
    obj_tenant_id: null,
    obj_code: e.code,
    obj_description: e.name,
    obj_type_code: 'TABLE',
    obj_connection_code: 'default',
    obj_payload: JSON.stringify(e.payload),
    obj_payload_object_name: e.table,
    obj_payload_identifier: e.identifier,
    obj_payload_column_prefix: e.prefix,
    obj_payload_table: e.table,
    obj_name: e.name,
    obj_db_key: e.identifier,
    obj_db_type: null,
    obj_connection_id: null,
    obj_add_dtls: JSON.stringify({ maintainedBy: e.maintainedBy }),
  };
  return buildEntityInfo(row, undefined);
}

const customers = entityOf('customers');
const profile = DEMO_PROFILES.find((p) => p.code === 'customers')!;
const policy = normalisePolicy({ modeCode: profile.mode, policy: JSON.stringify(profile.policy) });

const entry = (over: Partial<AuditRow>): AuditRow => ({
  id: 1,
  event: 'entity.updated',
  entityCode: 'customers',
  recordId: '5',
  userId: 3,
  userEmail: 'admin@acme.test',
  before: null,
  after: null,
  at: Date.UTC(2026, 10, 23, 5, 3, 25, 85),
  version: 2,
  changed: null,
  operationId: 'op',
  ...over,
});

describe(presentEntry.name, () => {
  const before = {
    id: 5,
    name: 'Alice',
    phone: '+44 20 7946 0101',
    credit_limit: 1000,
    internal_notes: 'secret note',
  };
  const after = { ...before, phone: '+44 20 7946 0999', credit_limit: 2000, internal_notes: 'other' };

  it('should list the recorded changes, masked on both sides, without excluded fields or write-only inputs', () => {
    const shown = presentEntry(
      customers,
      policy,
      entry({ before, after, changed: ['phone', 'credit_limit', 'internal_notes', 'password'] }),
    );
    expect(shown).toEqual({
      version: 2,
      action: 'updated',
      at: '2026-11-23T05:03:25.085Z',
      by: { id: 3, email: 'admin@acme.test' },
      changes: [
        {
          field: 'phone',
          before: expect.not.stringContaining('7946'),
          after: expect.stringMatching(/0999$/),
        },
        { field: 'credit_limit', before: 1000, after: 2000 },
      ],
    });
  });

  it('should diff before and after for entries written before D56 (no changed list)', () => {
    const shown = presentEntry(customers, policy, entry({ before, after: { ...before, name: 'Alicia' } }));
    expect(shown.changes).toEqual([{ field: 'name', before: 'Alice', after: 'Alicia' }]);
  });

  it('should show a create as every value set, with before null and no key', () => {
    const shown = presentEntry(
      customers,
      policy,
      entry({ event: 'entity.created', after: before, version: 1 }),
    );
    expect(shown.action).toBe('created');
    expect(shown.changes.map((c) => c.field)).toEqual(['name', 'phone', 'credit_limit']);
    expect(shown.changes.every((c) => c.before === null)).toBe(true);
  });

  it('should show a delete without changes and a restore as restored', () => {
    expect(presentEntry(customers, policy, entry({ event: 'entity.deleted', before })).changes).toEqual([]);
    expect(presentEntry(customers, policy, entry({ event: 'entity.restored', changed: [] })).action).toBe(
      'restored',
    );
  });
});
