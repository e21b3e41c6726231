import type { OpenAPIObject } from '@nestjs/swagger';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { ENTITY_EXTENSION, fieldSchema, schemaNames, singular, withEntities } from './entity-document';

const field = (f: Partial<FieldDef> & Pick<FieldDef, 'name' | 'type'>): FieldDef => ({
  column: `x_${f.name}`,
  required: false,
  unique: false,
  readOnly: false,
  hidden: false,
  ...f,
});

const entity = (code: string, fields: FieldDef[]): EntityInfo =>
  ({ code, description: code, supported: true, fields, relations: [] }) as unknown as EntityInfo;

const op = (id: string) => ({
  operationId: id,
  parameters: [{ name: 'entity_code', in: 'path', required: true }],
  responses: { '200': { description: 'ok', content: { 'application/json': { schema: {} } } } },
  security: [{ bearer: [], tenant: [] }],
});

function base(): OpenAPIObject {
  const withBody = (id: string) => ({
    ...op(id),
    requestBody: { content: { 'application/json': { schema: {} } } },
    responses: { '201': { description: 'ok', content: { 'application/json': { schema: {} } } } },
  });
  return {
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths: {
      '/api/v1/{entity_code}': { get: op('listRecords'), post: withBody('createRecord') },
      '/api/v1/{entity_code}/{id}': {
        get: op('getRecord'),
        put: { ...withBody('updateRecord'), responses: op('x').responses },
        delete: op('deleteRecord'),
      },
      '/api/v1/records': { get: op('listRecordsByQuery') },
    },
    components: { schemas: {} },
  } as unknown as OpenAPIObject;
}

describe('entity-document', () => {
  describe('singular', () => {
    it('should name a record of a plural code', () => {
      expect(['customers', 'orders', 'categories', 'boxes', 'status'].map(singular)).toEqual([
        'customer',
        'order',
        'category',
        'box',
        'status',
      ]);
    });
  });

  describe('fieldSchema', () => {
    it('should take the enum of a select field from its value set', () => {
      const s = fieldSchema(
        field({ name: 'tier', type: 'select', valueSet: 'customer_tiers' }),
        new Map([['customer_tiers', ['bronze', 'silver', 'gold']]]),
      );
      // OpenAPI 3.0.3: a nullable enum lists null, or validators refuse the NULL an optional field may hold.
      expect(s).toMatchObject({ type: 'string', enum: ['bronze', 'silver', 'gold', null], nullable: true });
    });

    it('should accept in create and update bodies the scalars the records core converts', () => {
      const schemas = (withEntities(base(), {
        entities: [
          entity('gadgets', [
            field({ name: 'id', type: 'integer', readOnly: true }),
            field({ name: 'label', type: 'text', required: true }),
            field({ name: 'size', type: 'integer' }),
          ]),
        ],
        valueSets: new Map(),
      }).components?.schemas ?? {}) as Record<string, any>;
      expect(schemas.GadgetInput.properties.label.anyOf).toEqual([
        { type: 'string' },
        { type: 'number' },
        { type: 'boolean' },
      ]);
      expect(schemas.GadgetInput.properties.size.anyOf[1]).toEqual({
        type: 'string',
        pattern: '^-?\\d{1,16}$',
      });
      // D43: the key read may be sent back on update, and only there.
      expect(schemas.GadgetUpdate.properties.id).toMatchObject({ type: 'integer', readOnly: true });
      expect(schemas.GadgetInput.properties.id).toBeUndefined();
    });

    it('should carry the registry constraints', () => {
      expect(
        fieldSchema(field({ name: 'name', type: 'text', required: true, maxLength: 100 }), new Map()),
      ).toEqual({ type: 'string', maxLength: 100 });
      expect(fieldSchema(field({ name: 'credit_limit', type: 'numeric', min: 0 }), new Map())).toMatchObject({
        type: 'number',
        minimum: 0,
      });
    });
  });

  describe('schemaNames', () => {
    it('should avoid a component name already taken', () => {
      expect(schemaNames('customers', new Set())).toEqual({
        read: 'Customer',
        input: 'CustomerInput',
        update: 'CustomerUpdate',
      });
      expect(schemaNames('customers', new Set(['Customer'])).read).toBe('CustomerRecord');
    });
  });

  describe('withEntities', () => {
    const catalog = {
      entities: [
        entity('customers', [
          field({ name: 'id', type: 'integer', readOnly: true }),
          field({ name: 'name', type: 'text', required: true }),
          field({ name: 'secret', type: 'text', hidden: true }),
        ]),
        // Shadowed by the static route /api/v1/records: no typed paths.
        entity('records', [field({ name: 'id', type: 'integer', readOnly: true })]),
      ],
      valueSets: new Map<string, string[]>(),
    };

    it('should add typed schemas and paths without changing the base', () => {
      const b = base();
      const doc = withEntities(b, catalog);
      expect(b.paths['/api/v1/customers']).toBeUndefined();
      expect(Object.keys(doc.components!.schemas!)).toEqual(['Customer', 'CustomerInput', 'CustomerUpdate']);
      expect(doc.components!.schemas!.Customer).toMatchObject({ required: ['id', 'lastModified'] });
      expect(Object.keys((doc.components!.schemas!.Customer as { properties: object }).properties)).toEqual([
        'id',
        'name',
        'lastModified',
      ]);
      expect(doc.components!.schemas!.CustomerInput).toMatchObject({ required: ['name'] });
      const list = doc.paths['/api/v1/customers'].get!;
      expect(list).toMatchObject({
        operationId: 'listCustomers',
        tags: ['customers'],
        [ENTITY_EXTENSION]: 'customers',
      });
      expect(list.parameters).toEqual([]);
      expect(list.security).toEqual([{ bearer: [], tenant: [] }]);
      expect(doc.paths['/api/v1/customers/{id}'].put!.operationId).toBe('updateCustomer');
      expect(doc.paths['/api/v1/records/{id}']).toBeUndefined();
    });
  });
});
