import { DEMO_ENTITIES } from '../database/seed/demo-data';
import {
  buildEntityInfo,
  columnOf,
  fieldByName,
  isSupportedDbType,
  RegistryRow,
  RESERVED_ENTITY_CODES,
} from './registry-entity';
import {
  isTableName,
  mergeRawPayloads,
  parseField,
  parseRawPayload,
  parseRelation,
  RegistryConfigError,
} from './registry-payload';
import { demoRegistryRow } from '../../test/support/demo-registry';

/** A system row of a demo entity, as the demo seed writes it. */
function demoRow(code: string, overrides: Partial<RegistryRow> = {}): RegistryRow {
  return demoRegistryRow(code, overrides);
}

/** A tenant row that only carries what it overrides. */
function tenantRow(overrides: Partial<RegistryRow>): RegistryRow {
  return {
    obj_id: 100,
    obj_tenant_id: 2,
    obj_code: 'customers',
    obj_description: null,
    obj_type_code: null,
    obj_connection_code: null,
    obj_payload: null,
    obj_payload_object_name: null,
    obj_payload_identifier: null,
    obj_payload_column_prefix: null,
    obj_payload_table: null,
    obj_name: null,
    obj_db_key: null,
    obj_db_type: null,
    obj_connection_id: null,
    obj_add_dtls: null,
    ...overrides,
  };
}

const withPayload = (payload: unknown, overrides: Partial<RegistryRow> = {}): RegistryRow =>
  demoRow('customers', { obj_payload: JSON.stringify(payload), ...overrides });

const field = (extra: Record<string, unknown>) => ({
  name: 'name',
  column: 'cus_name',
  type: 'text',
  ...extra,
});

function expectRejected(build: () => unknown, message: RegExp): void {
  let error: unknown;
  try {
    build();
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(RegistryConfigError);
  expect((error as Error).message).toMatch(message);
}

describe('buildEntityInfo', () => {
  describe('reserved codes (top-level names of /api/v1)', () => {
    it.each([...RESERVED_ENTITY_CODES, 'Webhooks'])(
      'should refuse the entity code %s with a clear error',
      (code) => {
        expectRejected(
          () => buildEntityInfo(demoRow('customers', { obj_code: code }), undefined),
          /is a top-level name of \/api\/v1 .*give the entity another code/,
        );
      },
    );

    it('should accept a code that only begins with a reserved name', () => {
      expect(buildEntityInfo(demoRow('customers', { obj_code: 'webhooks_log' }), undefined).code).toBe(
        'webhooks_log',
      );
    });
  });

  describe('demo entities', () => {
    it('should resolve customers with the fields, columns and relations of docs/demo-data.md', () => {
      const info = buildEntityInfo(demoRow('customers'), undefined);
      expect(info).toMatchObject({
        code: 'customers',
        registryId: 1,
        registryTenantId: null,
        description: 'Customers',
        type: 'TABLE',
        dbType: null,
        supported: true,
        connectionCode: 'default',
        table: 'demo_customers',
        primaryKeyColumn: 'cus_id',
        prefix: 'cus_',
        maintainedBy: 'tenant',
        relations: [{ entity: 'orders', foreignKey: 'customer_id', onDelete: 'restrict' }],
        columns: {
          tenant: 'cus_tenant_id',
          status: 'cus_status',
          isDeleted: 'cus_is_deleted',
          auditData: 'cus_audit_data',
          addDtls: 'cus_add_dtls',
          lastModified: 'cus_last_modified',
        },
      });
      expect(info.fields.map((f) => [f.name, f.column, f.type])).toEqual([
        ['id', 'cus_id', 'integer'],
        ['name', 'cus_name', 'text'],
        ['email', 'cus_email', 'email'],
        ['phone', 'cus_phone', 'text'],
        ['tier', 'cus_tier', 'select'],
        ['credit_limit', 'cus_credit_limit', 'numeric'],
        ['internal_notes', 'cus_internal_notes', 'text'],
      ]);
      expect(fieldByName(info, 'email')).toEqual({
        name: 'email',
        column: 'cus_email',
        type: 'email',
        required: true,
        unique: true,
        maxLength: 255,
        readOnly: false,
        hidden: false,
      });
      expect(fieldByName(info, 'id')).toMatchObject({ readOnly: true, required: false });
      expect(fieldByName(info, 'tier')).toMatchObject({ valueSet: 'customer_tiers' });
      expect(fieldByName(info, 'credit_limit')).toMatchObject({ min: 0 });
    });

    it('should resolve every demo entity', () => {
      for (const e of DEMO_ENTITIES) {
        const info = buildEntityInfo(demoRow(e.code), undefined);
        expect(info.fields).toHaveLength(e.payload.fields.length);
        expect(info.maintainedBy).toBe(e.maintainedBy);
      }
      const users = buildEntityInfo(demoRow('users'), undefined);
      expect(fieldByName(users, 'password_hash')).toMatchObject({ hidden: true });
      expect(fieldByName(users, 'role_id')?.references).toEqual({ entity: 'roles', field: 'id' });
    });
  });

  describe('columns and names', () => {
    it('should take the primary key from the identifier, then obj_db_key, then <prefix>id', () => {
      expect(
        buildEntityInfo(demoRow('customers', { obj_db_key: 'other_id' }), undefined).primaryKeyColumn,
      ).toBe('cus_id');
      const fromDbKey = demoRow('customers', { obj_payload_identifier: null, obj_db_key: 'cus_key' });
      expect(buildEntityInfo(fromDbKey, undefined).primaryKeyColumn).toBe('cus_key');
      const derived = demoRow('customers', { obj_payload_identifier: null, obj_db_key: null });
      expect(buildEntityInfo(derived, undefined).primaryKeyColumn).toBe('cus_id');
    });

    it('should add the underscore to a prefix given without it, and derive a missing prefix from the key', () => {
      const bare = buildEntityInfo(demoRow('customers', { obj_payload_column_prefix: 'cus' }), undefined);
      expect(bare.prefix).toBe('cus_');
      expect(bare.columns.tenant).toBe('cus_tenant_id');
      const derived = buildEntityInfo(demoRow('customers', { obj_payload_column_prefix: null }), undefined);
      expect(derived.prefix).toBe('cus_');
      expectRejected(
        () =>
          buildEntityInfo(
            demoRow('customers', {
              obj_payload_column_prefix: null,
              obj_payload_identifier: 'pk',
              obj_db_key: null,
            }),
            undefined,
          ),
        /no column prefix/,
      );
    });

    it('should take the table from obj_payload_table, else obj_payload_object_name, schema-qualified or not', () => {
      expect(buildEntityInfo(demoRow('customers', { obj_payload_table: null }), undefined).table).toBe(
        'demo_customers',
      );
      expect(
        buildEntityInfo(demoRow('customers', { obj_payload_table: 'sales.customers' }), undefined).table,
      ).toBe('sales.customers');
      expectRejected(
        () =>
          buildEntityInfo(
            demoRow('customers', { obj_payload_table: null, obj_payload_object_name: null }),
            undefined,
          ),
        /table null/,
      );
    });

    it.each([
      ['table', { obj_payload_table: 'demo_customers; DROP TABLE app_users' }],
      ['table', { obj_payload_table: 'a.b.c' }],
      ['table', { obj_payload_table: '"quoted"' }],
      ['primary key', { obj_payload_identifier: 'cus_id--' }],
      ['column prefix', { obj_payload_column_prefix: 'cus-' }],
    ])('should refuse a %s that is not a plain identifier', (_what, overrides) => {
      expectRejected(
        () => buildEntityInfo(demoRow('customers', overrides), undefined),
        /not a|plain identifier/,
      );
    });

    it('should read the object type case-insensitively, default TABLE, and refuse others', () => {
      expect(buildEntityInfo(demoRow('customers', { obj_type_code: null }), undefined).type).toBe('TABLE');
      expect(buildEntityInfo(demoRow('customers', { obj_type_code: 'view' }), undefined).type).toBe('VIEW');
      expect(buildEntityInfo(demoRow('customers', { obj_type_code: 'FUNCTION' }), undefined).type).toBe(
        'FUNCTION',
      );
      expectRejected(
        () => buildEntityInfo(demoRow('customers', { obj_type_code: 'VIEWS' }), undefined),
        /obj_type_code/,
      );
    });
  });

  describe('obj_db_type (D26)', () => {
    it.each([null, 'mssql', 'postgres', 'POSTGRESQL', 'mysql', 'mariadb', 'sqlite'])(
      'should support %s',
      (dbType) => {
        expect(buildEntityInfo(demoRow('customers', { obj_db_type: dbType }), undefined)).toMatchObject({
          supported: true,
          dbType: dbType?.toLowerCase() ?? null,
        });
      },
    );

    it.each(['mongodb', 'oracle', 'db2'])(
      'should mark %s unsupported with the default configuration, whatever its payload',
      (dbType) => {
        const info = buildEntityInfo(
          demoRow('customers', { obj_db_type: dbType, obj_payload: '{not json' }),
          undefined,
        );
        expect(info).toMatchObject({
          supported: false,
          dbType,
          fields: [],
          relations: [],
          table: 'demo_customers',
        });
      },
    );

    it('should treat a blank type as the connection dialect', () => {
      expect(isSupportedDbType(null)).toBe(true);
      expect(buildEntityInfo(demoRow('customers', { obj_db_type: '  ' }), undefined).dbType).toBeNull();
    });
  });

  describe('maintainedBy (D21)', () => {
    it('should default to tenant', () => {
      expect(buildEntityInfo(demoRow('customers', { obj_add_dtls: null }), undefined).maintainedBy).toBe(
        'tenant',
      );
      expect(buildEntityInfo(demoRow('customers', { obj_add_dtls: '{}' }), undefined).maintainedBy).toBe(
        'tenant',
      );
    });

    it('should let a tenant row make an entity system-maintained but never the reverse', () => {
      const up = tenantRow({ obj_add_dtls: JSON.stringify({ maintainedBy: 'system' }) });
      expect(buildEntityInfo(demoRow('customers'), up).maintainedBy).toBe('system');
      const down = tenantRow({ obj_code: 'users', obj_add_dtls: JSON.stringify({ maintainedBy: 'tenant' }) });
      expect(buildEntityInfo(demoRow('users'), down).maintainedBy).toBe('system');
    });

    it('should refuse an unknown value or unparsable obj_add_dtls', () => {
      expectRejected(
        () => buildEntityInfo(demoRow('customers', { obj_add_dtls: '{"maintainedBy":"anyone"}' }), undefined),
        /maintainedBy/,
      );
      expectRejected(
        () => buildEntityInfo(demoRow('customers', { obj_add_dtls: '{' }), undefined),
        /obj_add_dtls/,
      );
    });
  });

  describe('tenant rows (D20)', () => {
    it('should report the tenant row as the winner and let its non-null columns override', () => {
      const info = buildEntityInfo(
        demoRow('customers'),
        tenantRow({
          obj_description: 'Clients',
          obj_connection_code: 'crm',
          obj_db_type: '',
          obj_payload_table: '',
        }),
      );
      expect(info).toMatchObject({
        registryId: 100,
        registryTenantId: '2',
        description: 'Clients',
        connectionCode: 'crm',
        dbType: null,
        table: 'demo_customers',
        primaryKeyColumn: 'cus_id',
      });
      expect(info.fields).toHaveLength(7);
    });

    it('should merge fields by name: change a property, drop one with null, add a field', () => {
      const tenant = tenantRow({
        obj_payload: JSON.stringify({
          fields: [
            { name: 'name', maxLength: 200 },
            { name: 'phone', maxLength: null, required: true },
            { name: 'vip', column: 'cus_vip', type: 'boolean' },
          ],
        }),
      });
      const info = buildEntityInfo(demoRow('customers'), tenant);
      expect(info.fields.map((f) => f.name)).toEqual([
        'id',
        'name',
        'email',
        'phone',
        'tier',
        'credit_limit',
        'internal_notes',
        'vip',
      ]);
      expect(fieldByName(info, 'name')).toMatchObject({ column: 'cus_name', required: true, maxLength: 200 });
      expect(fieldByName(info, 'phone')).toEqual({
        name: 'phone',
        column: 'cus_phone',
        type: 'text',
        required: true,
        unique: false,
        readOnly: false,
        hidden: false,
      });
      expect(columnOf(info, 'vip')).toBe('cus_vip');
      expect(info.relations).toEqual([{ entity: 'orders', foreignKey: 'customer_id', onDelete: 'restrict' }]);
    });

    it('should merge relations by entity and foreign key', () => {
      const tenant = tenantRow({
        obj_payload: JSON.stringify({
          relations: [
            { entity: 'orders', foreignKey: 'customer_id', onDelete: 'cascade' },
            { entity: 'invoices', foreignKey: 'customer_id' },
          ],
        }),
      });
      expect(buildEntityInfo(demoRow('customers'), tenant).relations).toEqual([
        { entity: 'orders', foreignKey: 'customer_id', onDelete: 'cascade' },
        { entity: 'invoices', foreignKey: 'customer_id', onDelete: 'restrict' },
      ]);
    });

    it('should build an entity from a tenant row alone', () => {
      const info = buildEntityInfo(undefined, {
        ...demoRow('customers'),
        obj_id: 7,
        obj_tenant_id: 2,
        obj_code: 'leads',
      });
      expect(info).toMatchObject({ code: 'leads', registryId: 7, registryTenantId: '2' });
    });

    it('should refuse a tenant field that is new but has no column', () => {
      const tenant = tenantRow({
        obj_payload: JSON.stringify({ fields: [{ name: 'vip', type: 'boolean' }] }),
      });
      expectRejected(() => buildEntityInfo(demoRow('customers'), tenant), /"vip" has no column/);
    });

    it('should refuse two fields on one column after the merge', () => {
      const tenant = tenantRow({
        obj_payload: JSON.stringify({ fields: [{ name: 'alias', column: 'CUS_NAME', type: 'text' }] }),
      });
      expectRejected(() => buildEntityInfo(demoRow('customers'), tenant), /share column/);
    });
  });

  it('should force readOnly on the primary-key field', () => {
    const info = buildEntityInfo(
      withPayload({ fields: [{ name: 'id', column: 'cus_id', type: 'integer' }] }),
      undefined,
    );
    expect(fieldByName(info, 'id')?.readOnly).toBe(true);
  });

  it('should give no fields for a row without payload', () => {
    expect(buildEntityInfo(demoRow('customers', { obj_payload: null }), undefined)).toMatchObject({
      fields: [],
      relations: [],
    });
  });
});

describe('parseRawPayload', () => {
  it.each([
    ['{not json', /not valid JSON/],
    ['[]', /not a JSON object/],
    ['"text"', /not a JSON object/],
    ['{"fields": {}}', /fields is not an array/],
    ['{"fields": [1]}', /fields is not an array of objects/],
    ['{"fields": [{"column": "cus_name"}]}', /has no name/],
    ['{"fields": [{"name": "a"}, {"name": "a"}]}', /defined twice/],
    ['{"relations": [{"entity": "orders"}]}', /lacks entity or foreignKey/],
  ])('should refuse %s', (payload, message) => {
    expectRejected(() => parseRawPayload(payload), message);
  });

  it('should read NULL and empty as no metadata and ignore unknown top-level keys', () => {
    expect(parseRawPayload(null)).toEqual({ fields: [], relations: [] });
    expect(parseRawPayload('')).toEqual({ fields: [], relations: [] });
    expect(parseRawPayload('{"version": 2}')).toEqual({ fields: [], relations: [] });
  });
});

describe('mergeRawPayloads', () => {
  it('should keep the system payload when there is no tenant payload', () => {
    const system = parseRawPayload(JSON.stringify({ fields: [field({})] }));
    expect(mergeRawPayloads(system, undefined)).toBe(system);
    expect(mergeRawPayloads(undefined, system)).toEqual(system);
  });
});

describe('parseField', () => {
  it.each([
    ['a column with SQL in it', field({ column: 'cus_name; DROP TABLE x' }), /not a plain identifier/],
    ['a quoted column', field({ column: 'cus_name" --' }), /not a plain identifier/],
    ['a column starting with a digit', field({ column: '1cus' }), /not a plain identifier/],
    [
      'a column longer than 128 characters',
      field({ column: `c${'x'.repeat(128)}` }),
      /not a plain identifier/,
    ],
    ['a missing column', field({ column: undefined }), /has no column/],
    ['a field name with SQL in it', field({ name: 'name) OR 1=1 --' }), /not a plain identifier/],
    ['an unknown type', field({ type: 'varchar' }), /unknown type "varchar"/],
    ['a missing type', field({ type: undefined }), /unknown type/],
    ['a non-boolean flag', field({ required: 'yes' }), /required is not a boolean/],
    ['a fractional maxLength', field({ maxLength: 1.5 }), /maxLength/],
    ['a zero maxLength', field({ maxLength: 0 }), /maxLength/],
    ['a non-numeric min', field({ min: '0' }), /min is not a finite number/],
    ['min above max', field({ min: 5, max: 1 }), /min is greater than max/],
    ['an invalid pattern', field({ pattern: '([a-z' }), /pattern/],
    ['a select without value set', field({ type: 'select' }), /needs a valueSet/],
    ['references without field', field({ references: { entity: 'orders' } }), /references/],
    [
      'references with SQL in the field',
      field({ references: { entity: 'orders', field: 'id;--' } }),
      /references/,
    ],
  ])('should refuse %s', (_what, raw, message) => {
    expectRejected(() => parseField(raw), message);
  });

  it('should keep the optional rules that are set and default the flags to false', () => {
    expect(
      parseField(field({ pattern: '^[A-Z]', min: 1, max: 9, unknownKey: 'ignored', references: null })),
    ).toEqual({
      name: 'name',
      column: 'cus_name',
      type: 'text',
      required: false,
      unique: false,
      readOnly: false,
      hidden: false,
      min: 1,
      max: 9,
      pattern: '^[A-Z]',
    });
  });
});

describe('parseRelation', () => {
  it('should default onDelete to restrict and refuse other values', () => {
    expect(parseRelation({ entity: 'orders', foreignKey: 'customer_id' }).onDelete).toBe('restrict');
    expectRejected(
      () => parseRelation({ entity: 'orders', foreignKey: 'customer_id', onDelete: 'set null' }),
      /onDelete/,
    );
    expectRejected(() => parseRelation({ entity: 'orders x', foreignKey: 'customer_id' }), /entity code/);
    expectRejected(() => parseRelation({ entity: 'orders', foreignKey: 'customer id' }), /field name/);
  });
});

describe('isTableName', () => {
  it('should accept one optional schema qualifier only', () => {
    expect(isTableName('demo_customers')).toBe(true);
    expect(isTableName('dbo.demo_customers')).toBe(true);
    expect(isTableName('db.dbo.demo_customers')).toBe(false);
    expect(isTableName('demo customers')).toBe(false);
    expect(isTableName('')).toBe(false);
  });
});
