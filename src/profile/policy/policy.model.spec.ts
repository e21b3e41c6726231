import { DEMO_ENTITIES, DEMO_PROFILES } from '../../database/seed/demo-data';
import type { FieldDef } from '../../registry/registry.types';
import { EntityPolicy, normalisePolicy, PolicyError, validatePolicyAgainstFields } from './policy.model';
import { parseRowFilter } from '../row-filter';

function demoFields(entityCode: string): FieldDef[] {
  const entity = DEMO_ENTITIES.find((e) => e.code === entityCode);
  if (!entity) throw new Error(`no demo entity ${entityCode}`);
  return entity.payload.fields.map((f) => ({
    ...f,
    required: f.required ?? false,
    unique: f.unique ?? false,
    readOnly: f.readOnly ?? false,
    hidden: f.hidden ?? false,
  }));
}

function problemsOf(input: Parameters<typeof normalisePolicy>[0]): string[] {
  try {
    normalisePolicy(input);
  } catch (err) {
    if (err instanceof PolicyError) return err.problems;
    throw err;
  }
  throw new Error('expected a PolicyError');
}

const ALL = { read: true, write: true, delete: true, export: true, approve: true };

describe('normalisePolicy', () => {
  describe('defaults', () => {
    it('should give safe defaults for an empty policy', () => {
      const expected: EntityPolicy = {
        mode: 'FULL',
        tenantMode: 'STRICT',
        projection: null,
        masking: {},
        writableFields: null,
        rowFilter: null,
        query: { allowAdhocFilters: true, maxPageSize: 500, defaultPageSize: 100 },
        permissions: ALL,
        audit: { enabled: false, logCreations: false, logUpdates: false, logDeletions: false },
      };
      expect(normalisePolicy({ modeCode: 'FULL', policy: null })).toEqual(expected);
      expect(normalisePolicy({ modeCode: 'FULL', policy: {} })).toEqual(expected);
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: undefined, tenantPolicy: null, projection: null }),
      ).toEqual(expected);
    });

    it('should default the tenant mode to STRICT, never PERMISSIVE', () => {
      expect(normalisePolicy({ modeCode: 'FULL', policy: { tenantPolicy: {} } }).tenantMode).toBe('STRICT');
      expect(normalisePolicy({ modeCode: 'FULL', policy: { tenantPolicy: { mode: null } } }).tenantMode).toBe(
        'STRICT',
      );
    });

    it('should accept the tenant modes in any case', () => {
      expect(
        normalisePolicy({ modeCode: 'full', policy: { tenantPolicy: { mode: 'optional' } } }),
      ).toMatchObject({
        mode: 'FULL',
        tenantMode: 'OPTIONAL',
      });
      expect(normalisePolicy({ modeCode: 'READ', policy: { tenantPolicy: 'PERMISSIVE' } }).tenantMode).toBe(
        'PERMISSIVE',
      );
    });

    it('should keep defaultPageSize within maxPageSize', () => {
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: { queryPolicy: { maxPageSize: 50 } } }).query,
      ).toEqual({
        allowAdhocFilters: true,
        maxPageSize: 50,
        defaultPageSize: 50,
      });
    });

    it('should switch every audit flag on with enabled alone, and off without it', () => {
      expect(normalisePolicy({ modeCode: 'FULL', policy: { audit: { enabled: true } } }).audit).toEqual({
        enabled: true,
        logCreations: true,
        logUpdates: true,
        logDeletions: true,
      });
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: { audit: { enabled: false, logCreations: true } } })
          .audit,
      ).toEqual({ enabled: false, logCreations: false, logUpdates: false, logDeletions: false });
      expect(normalisePolicy({ modeCode: 'FULL', policy: { audit: { logUpdates: true } } }).audit).toEqual({
        enabled: true,
        logCreations: true,
        logUpdates: true,
        logDeletions: true,
      });
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: { audit: { enabled: true, logDeletions: false } } }).audit
          .logDeletions,
      ).toBe(false);
    });
  });

  describe('permissions and mode (D22)', () => {
    it.each([
      ['FULL', ALL],
      ['WRITE', { read: true, write: true, delete: false, export: true, approve: true }],
      ['READ', { read: true, write: false, delete: false, export: true, approve: false }],
      ['EXECUTE', { read: true, write: false, delete: false, export: true, approve: false }],
    ])('should limit the default permissions of mode %s', (mode, expected) => {
      expect(normalisePolicy({ modeCode: mode, policy: {} }).permissions).toEqual(expected);
    });

    it('should not let permissions grant what the mode forbids', () => {
      expect(normalisePolicy({ modeCode: 'READ', policy: { permissions: ALL } }).permissions).toEqual({
        read: true,
        write: false,
        delete: false,
        export: true,
        approve: false,
      });
    });

    it('should apply explicit false permissions', () => {
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: { permissions: { delete: false, export: false } } })
          .permissions,
      ).toEqual({ read: true, write: true, delete: false, export: false, approve: true });
    });
  });

  describe('variants', () => {
    it('should read variant A', () => {
      const policy = normalisePolicy({
        modeCode: 'FULL',
        policy: {
          tenantPolicy: { mode: 'OPTIONAL' },
          projection: { type: 'include', fields: ['id', 'name'] },
          queryPolicy: { allowAdhocFilters: false, maxPageSize: 200, defaultPageSize: 20 },
          permissions: { ...ALL, approve: false },
          audit: { enabled: true, logCreations: true, logUpdates: false, logDeletions: true },
        },
      });
      expect(policy).toEqual({
        mode: 'FULL',
        tenantMode: 'OPTIONAL',
        projection: { type: 'include', fields: ['id', 'name'] },
        masking: {},
        writableFields: null,
        rowFilter: null,
        query: { allowAdhocFilters: false, maxPageSize: 200, defaultPageSize: 20 },
        permissions: { ...ALL, approve: false },
        audit: { enabled: true, logCreations: true, logUpdates: false, logDeletions: true },
      });
    });

    it('should read variant B', () => {
      const policy = normalisePolicy({
        modeCode: 'WRITE',
        policy: {
          projection: { type: 'exclude', excludeFields: ['internal_notes'] },
          masking: { phone: 'partial', email: 'HASH' },
          writableFields: ['name', 'phone'],
          rowFilters: { where: 'owner_id = @user.id' },
        },
      });
      expect(policy).toMatchObject({
        mode: 'WRITE',
        tenantMode: 'STRICT',
        projection: { type: 'exclude', fields: ['internal_notes'] },
        masking: { phone: 'partial', email: 'hash' },
        writableFields: ['name', 'phone'],
        rowFilter: parseRowFilter('owner_id = @user.id'),
      });
    });

    it('should normalise equivalent variant A and variant B input to the same model', () => {
      const a = normalisePolicy({
        modeCode: 'FULL',
        policy: { tenantPolicy: { mode: 'STRICT' }, projection: { excludeFields: ['internal_notes'] } },
      });
      const b = normalisePolicy({
        modeCode: 'FULL',
        policy: { projection: { type: 'exclude', fields: ['internal_notes'] } },
      });
      const columns = normalisePolicy({
        modeCode: 'FULL',
        policy: null,
        tenantPolicy: { mode: 'STRICT' },
        projection: { type: 'exclude', excludeFields: ['internal_notes'] },
      });
      expect(b).toEqual(a);
      expect(columns).toEqual(a);
    });

    it('should read the same projection from every accepted spelling', () => {
      const expected = { type: 'include', fields: ['id', 'name'] };
      const spellings: unknown[] = [
        { type: 'include', fields: ['id', 'name'] },
        { fields: ['id', 'name'] },
        { includeFields: ['id', 'name'] },
        { include: ['id', 'name'] },
        ['id', 'name'],
        { type: 'include', fields: ['id', 'name', 'email'], excludeFields: ['email'] },
        { fields: ['id', 'id', 'name'] },
      ];
      for (const projection of spellings) {
        expect(normalisePolicy({ modeCode: 'FULL', policy: { projection } }).projection).toEqual(expected);
      }
      expect(
        normalisePolicy({ modeCode: 'FULL', policy: { projection: { exclude: ['x'] } } }).projection,
      ).toEqual({
        type: 'exclude',
        fields: ['x'],
      });
      expect(normalisePolicy({ modeCode: 'FULL', policy: { projection: {} } }).projection).toBeNull();
    });

    it('should read JSON text, as SQLite returns JSON columns', () => {
      const policy = normalisePolicy({
        modeCode: 'FULL',
        policy: '{"masking":{"phone":"mask"}}',
        tenantPolicy: '{"mode":"OPTIONAL"}',
        projection: '{"type":"exclude","excludeFields":["internal_notes"]}',
      });
      expect(policy).toMatchObject({
        tenantMode: 'OPTIONAL',
        masking: { phone: 'mask' },
        projection: { type: 'exclude', fields: ['internal_notes'] },
      });
      expect(normalisePolicy({ modeCode: 'FULL', policy: '', tenantPolicy: 'optional' }).tenantMode).toBe(
        'OPTIONAL',
      );
    });
  });

  describe('policy keys and columns', () => {
    it('should let prf_policy keys win over the prf_policy_tenantpolicy and prf_policy_projection columns', () => {
      const policy = normalisePolicy({
        modeCode: 'FULL',
        policy: { tenantPolicy: { mode: 'STRICT' }, projection: { type: 'include', fields: ['id'] } },
        tenantPolicy: { mode: 'PERMISSIVE' },
        projection: { type: 'exclude', excludeFields: ['x'] },
      });
      expect(policy.tenantMode).toBe('STRICT');
      expect(policy.projection).toEqual({ type: 'include', fields: ['id'] });
    });

    it('should use the columns when prf_policy lacks the keys', () => {
      const policy = normalisePolicy({
        modeCode: 'FULL',
        policy: { masking: { phone: 'redact' } },
        tenantPolicy: { mode: 'OPTIONAL' },
        projection: { type: 'include', fields: ['id'] },
      });
      expect(policy.tenantMode).toBe('OPTIONAL');
      expect(policy.projection).toEqual({ type: 'include', fields: ['id'] });
    });
  });

  describe('the demo profiles', () => {
    it.each(DEMO_PROFILES.map((p) => [p.code, p] as const))(
      'should normalise demo profile %s without problems',
      (_code, profile) => {
        const policy = normalisePolicy({ modeCode: profile.mode, policy: profile.policy });
        expect(policy.tenantMode).toBe('STRICT');
        expect(validatePolicyAgainstFields(policy, demoFields(profile.objectCode))).toEqual([]);
      },
    );

    it('should read the customers profile as exclude internal_notes, phone partial, audit on', () => {
      const profile = DEMO_PROFILES.find((p) => p.code === 'customers')!;
      expect(normalisePolicy({ modeCode: profile.mode, policy: profile.policy })).toEqual({
        mode: 'FULL',
        tenantMode: 'STRICT',
        projection: { type: 'exclude', fields: ['internal_notes'] },
        masking: { phone: 'partial' },
        writableFields: null,
        rowFilter: null,
        query: { allowAdhocFilters: true, maxPageSize: 500, defaultPageSize: 100 },
        permissions: ALL,
        audit: { enabled: true, logCreations: true, logUpdates: true, logDeletions: true },
      });
    });

    it('should read the users profile without delete and the roles profile as read-only', () => {
      const users = DEMO_PROFILES.find((p) => p.code === 'users')!;
      const roles = DEMO_PROFILES.find((p) => p.code === 'roles')!;
      expect(normalisePolicy({ modeCode: users.mode, policy: users.policy }).permissions.delete).toBe(false);
      expect(normalisePolicy({ modeCode: roles.mode, policy: roles.policy }).permissions).toEqual({
        read: true,
        write: false,
        delete: false,
        export: true,
        approve: false,
      });
    });

    it('should survive a JSON round trip (the profile cache stores it as JSON)', () => {
      const policy = normalisePolicy({
        modeCode: 'FULL',
        policy: { rowFilters: { where: "a IN (1, 'x', TRUE) AND NOT b IS NULL AND c = @user.id" } },
      });
      expect(JSON.parse(JSON.stringify(policy))).toEqual(policy);
    });
  });

  describe('rejections', () => {
    it.each<[string, Parameters<typeof normalisePolicy>[0], string]>([
      ['an unknown mode', { modeCode: 'ADMIN', policy: {} }, 'prf_mode_code "ADMIN" is not one of'],
      ['a missing mode', { modeCode: undefined as unknown as string, policy: {} }, 'prf_mode_code'],
      [
        'a policy that is not an object',
        { modeCode: 'FULL', policy: [1] },
        'prf_policy must be a JSON object',
      ],
      ['policy text that is not JSON', { modeCode: 'FULL', policy: '{oops' }, 'prf_policy is not valid JSON'],
      ['an unknown tenant mode', { modeCode: 'FULL', policy: { tenantPolicy: { mode: 'LOOSE' } } }, 'LOOSE'],
      [
        'an unknown tenant mode in the column',
        { modeCode: 'FULL', policy: {}, tenantPolicy: { mode: 'NONE' } },
        'prf_policy_tenantpolicy.mode "NONE"',
      ],
      [
        'an unknown masking kind',
        { modeCode: 'FULL', policy: { masking: { phone: 'blur' } } },
        'masking.phone "blur"',
      ],
      [
        'masking that is not a map',
        { modeCode: 'FULL', policy: { masking: ['phone'] } },
        'masking must be an object',
      ],
      [
        'projection fields that are not an array',
        { modeCode: 'FULL', policy: { projection: { type: 'include', fields: 'id,name' } } },
        'prf_policy.projection.fields must be an array',
      ],
      [
        'a projection field that is not a string',
        { modeCode: 'FULL', policy: { projection: { fields: ['id', 3] } } },
        'prf_policy.projection.fields[1] must be a non-empty string',
      ],
      [
        'an unknown projection type',
        { modeCode: 'FULL', policy: { projection: { type: 'only', fields: [] } } },
        'is not include or exclude',
      ],
      [
        'a misspelt projection key',
        { modeCode: 'FULL', policy: { projection: { type: 'exclude', excludFields: ['x'] } } },
        "unknown key 'excludFields'",
      ],
      [
        'an include projection without fields',
        { modeCode: 'FULL', policy: { projection: { type: 'include' } } },
        'no fields are listed',
      ],
      [
        'an exclude projection with included fields',
        { modeCode: 'FULL', policy: { projection: { type: 'exclude', includeFields: ['a'] } } },
        'type exclude but also lists included fields',
      ],
      [
        'writableFields that are not an array',
        { modeCode: 'FULL', policy: { writableFields: 'name' } },
        'writableFields must be an array',
      ],
      [
        'a row filter that does not parse',
        { modeCode: 'FULL', policy: { rowFilters: { where: 'tenant_id = 1 OR 1=1 --' } } },
        'rowFilters.where: Invalid row filter at position 21: comments (--) are not allowed',
      ],
      [
        'a row filter that is not a string',
        { modeCode: 'FULL', policy: { rowFilters: { where: { a: 1 } } } },
        'rowFilters.where must be a string',
      ],
      [
        'rowFilters that are not an object',
        { modeCode: 'FULL', policy: { rowFilters: 'a = 1' } },
        'rowFilters must be an object',
      ],
      [
        'a zero page size',
        { modeCode: 'FULL', policy: { queryPolicy: { maxPageSize: 0 } } },
        'queryPolicy.maxPageSize must be a positive integer',
      ],
      [
        'a negative page size',
        { modeCode: 'FULL', policy: { queryPolicy: { defaultPageSize: -5 } } },
        'queryPolicy.defaultPageSize must be a positive integer',
      ],
      [
        'a page size given as text',
        { modeCode: 'FULL', policy: { queryPolicy: { maxPageSize: '500' } } },
        'queryPolicy.maxPageSize must be a positive integer',
      ],
      [
        'a page size above the ceiling',
        { modeCode: 'FULL', policy: { queryPolicy: { maxPageSize: 1000000 } } },
        'must not exceed 10000',
      ],
      [
        'a default page size above the maximum',
        { modeCode: 'FULL', policy: { queryPolicy: { maxPageSize: 50, defaultPageSize: 100 } } },
        'defaultPageSize 100 exceeds maxPageSize 50',
      ],
      [
        'a permission that is not a boolean',
        { modeCode: 'FULL', policy: { permissions: { read: 'yes' } } },
        'permissions.read must be a boolean',
      ],
      [
        'an unknown permission',
        { modeCode: 'FULL', policy: { permissions: { admin: true } } },
        "permissions has unknown key 'admin'",
      ],
      [
        'an audit flag that is not a boolean',
        { modeCode: 'FULL', policy: { audit: { enabled: 1 } } },
        'audit.enabled must be a boolean',
      ],
    ])('should reject %s', (_what, input, message) => {
      expect(problemsOf(input).join('\n')).toContain(message);
    });

    it('should list every problem in one error', () => {
      let error: unknown;
      try {
        normalisePolicy({
          modeCode: 'NOPE',
          policy: { masking: { a: 'x' }, queryPolicy: { maxPageSize: 0 }, rowFilters: { where: 'sleep(5)' } },
        });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(PolicyError);
      const policyError = error as PolicyError;
      expect(policyError.problems).toHaveLength(4);
      expect(policyError.message).toMatch(/^Invalid profile policy: prf_mode_code "NOPE".*; masking\.a/);
    });
  });
});

describe('validatePolicyAgainstFields', () => {
  const fields = demoFields('customers');

  it('should accept a policy that names only registry fields', () => {
    const policy = normalisePolicy({
      modeCode: 'FULL',
      policy: {
        projection: { type: 'include', fields: ['id', 'name', 'phone'] },
        masking: { phone: 'partial' },
        writableFields: ['name', 'phone'],
        rowFilters: { where: "tier IN ('gold') OR credit_limit > 0" },
      },
    });
    expect(validatePolicyAgainstFields(policy, fields)).toEqual([]);
  });

  it('should list every name that is not a registry field', () => {
    const policy = normalisePolicy({
      modeCode: 'FULL',
      policy: {
        projection: { type: 'exclude', excludeFields: ['notes'] },
        masking: { mobile: 'mask' },
        writableFields: ['nme'],
        rowFilters: { where: 'owner_id = @user.id' },
      },
    });
    expect(validatePolicyAgainstFields(policy, fields)).toEqual([
      "projection names unknown field 'notes'",
      "masking names unknown field 'mobile'",
      "writableFields names unknown field 'nme'",
      "rowFilters.where names unknown field 'owner_id'",
    ]);
  });

  it('should flag included hidden fields and writable read-only or hidden fields', () => {
    const policy = normalisePolicy({
      modeCode: 'FULL',
      policy: {
        projection: { type: 'include', fields: ['id', 'password_hash'] },
        writableFields: ['id', 'password_hash', 'first_name'],
      },
    });
    expect(validatePolicyAgainstFields(policy, demoFields('users'))).toEqual([
      "projection includes hidden field 'password_hash'",
      "writableFields lists read-only field 'id'",
      "writableFields lists hidden field 'password_hash'",
    ]);
  });
});
