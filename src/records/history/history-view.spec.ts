import { DEMO_PROFILES } from '../../database/seed/demo-data';
import { normalisePolicy } from '../../profile/policy/policy.model';
import type { AuditRow } from './history.repository';
import { presentEntry } from './history-view';
import { demoEntityInfo } from '../../../test/support/demo-registry';

function entityOf(code: string) {
  return demoEntityInfo(code);
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
