import { catalogEntry } from './catalog-entry';
import type { CatalogProfileRow } from './profile-catalog.repository';
import { bareTableName } from './profile-catalog.repository';
import { type CatalogReport, reportFor } from './profile-catalog.service';

const row = (over: Partial<CatalogProfileRow> = {}): CatalogProfileRow => ({
  prf_id: 3,
  prf_tenant_id: null,
  prf_code: 'orders',
  prf_description: 'Orders',
  prf_object_code: 'orders',
  prf_mode_code: 'FULL',
  prf_policy: JSON.stringify({ tenantPolicy: { mode: 'STRICT' } }),
  prf_payload: null,
  prf_policy_tenantpolicy: null,
  prf_policy_projection: null,
  prf_policy_encryption_required: null,
  prf_policy_audit_level: null,
  ...over,
});

describe('catalogEntry', () => {
  it('should parse the JSON columns and normalise the policy', () => {
    const built = catalogEntry(row({ prf_tenant_id: 2 }), '2026-01-01T00:00:00.000Z');
    expect(built).toEqual({
      entry: expect.objectContaining({
        code: 'orders',
        id: 3,
        tenantId: '2',
        mode: 'FULL',
        json: expect.objectContaining({
          prf_policy: { tenantPolicy: { mode: 'STRICT' } },
          prf_payload: null,
        }),
        policy: expect.objectContaining({ tenantMode: 'STRICT' }),
        loadedAt: '2026-01-01T00:00:00.000Z',
      }),
    });
  });

  it('should report a JSON column that does not parse, naming the column', () => {
    expect(catalogEntry(row({ prf_payload: '{oops' }), 'now')).toEqual({
      failure: {
        code: 'orders',
        tenantId: null,
        stage: 'serialize',
        reason: expect.stringContaining('prf_payload'),
      },
    });
  });

  it('should report a policy the loader would refuse', () => {
    expect(catalogEntry(row({ prf_mode_code: 'SOMETIMES' }), 'now')).toEqual({
      failure: expect.objectContaining({ code: 'orders', stage: 'serialize' }),
    });
  });
});

describe('bareTableName', () => {
  it('should drop the schema and quotes and compare in lower case', () => {
    expect(bareTableName('dbo.App_Object_Profiles')).toBe('app_object_profiles');
    expect(bareTableName('"app_object_registries"')).toBe('app_object_registries');
  });
});

describe('reportFor', () => {
  const report: CatalogReport = {
    count: 3,
    keys: ['a', 'b', 'c'],
    owners: { a: null, b: '1', c: '2' },
    failed: [
      { code: 'x', tenantId: '2', stage: 'serialize', reason: 'r' },
      { code: 'y', tenantId: null, stage: 'store', reason: 'r' },
    ],
    reloadedAt: 'now',
  };

  it('should show a tenant the system-wide profiles and its own, failures included', () => {
    const seen = reportFor(report, '1');
    expect(seen).toMatchObject({ count: 2, keys: ['a', 'b'] });
    expect(seen.failed.map((f) => f.code)).toEqual(['y']);
    expect(reportFor(report, undefined)).toBe(report);
  });
});
