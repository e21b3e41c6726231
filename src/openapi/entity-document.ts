import type { OpenAPIObject, OperationObject, ParameterObject, SchemaObject } from '@nestjs/swagger';
import { secretInputsOf } from '../records/secret-inputs';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { deleteSchema, LIST_PARAMETERS, listResultSchema, successSchema } from '../entity/entity.api-docs';
import { inputFieldSchema } from './entity-input-schema';
import { withoutPrefilledExamples } from './parameter-examples';

/**
 * The registry's entities in the OpenAPI document: per entity a record schema (`Customer`), a create
 * body (`CustomerInput`), an update body (`CustomerUpdate`) and typed paths `/api/v1/<code>` and
 * `/api/v1/<code>/{id}`, which the generic `/api/v1/{entity_code}` routes really serve. Operations
 * are copies of the generic ones (security, errors, headers) with typed schemas and their own ids.
 */

/** What the generator needs of the catalog: the entities and the codes of the value sets. */
export interface EntityCatalog {
  entities: EntityInfo[];
  /** vs_code → the codes of its values (spec 2.10), for `select` fields. */
  valueSets: Map<string, string[]>;
}

/** `x-entity-code` marks the generated operations (tests and clients can tell them from the generic ones). */
export const ENTITY_EXTENSION = 'x-entity-code';

const GENERIC_COLLECTION = '/api/v1/{entity_code}';
const GENERIC_ITEM = '/api/v1/{entity_code}/{id}';
/**
 * D51's bulk route. `/api/v1/customers/bulk` fits it and `/api/v1/customers/{id}` alike (by path
 * only: the bulk route takes POST, the item routes GET, PUT and DELETE). Kept last in the document,
 * so that Redocly names it, not each entity's item path, in its one accepted finding
 * (.redocly.lint-ignore.yaml).
 */
const GENERIC_BULK = '/api/v1/{entity_code}/bulk';
/**
 * D55's live changes: `/api/v1/customers/changes` fits `/api/v1/customers/{id}` too, but ids are
 * integers and the router prefers the static segment. Kept last as well, for the same reason.
 */
const GENERIC_CHANGES = '/api/v1/{entity_code}/changes';
/**
 * D53's imports: `/api/v1/customers/imports` fits `/api/v1/customers/{id}` (ids are integers, the
 * router prefers the static segment), and `/api/v1/imports/{importId}` (no entity may be coded
 * `imports`: a reserved name). Kept last as well.
 */
const GENERIC_IMPORTS = '/api/v1/{entity_code}/imports';

function bulkPathLast(doc: OpenAPIObject): OpenAPIObject {
  for (const path of [GENERIC_IMPORTS, GENERIC_CHANGES, GENERIC_BULK]) {
    const item = doc.paths[path];
    if (item) {
      delete doc.paths[path];
      doc.paths[path] = item;
    }
  }
  return doc;
}

function pascal(code: string): string {
  return code
    .split(/[_\-.]+/)
    .filter(Boolean)
    .map((p) => p[0].toUpperCase() + p.slice(1))
    .join('');
}

/** `customers` → `Customer`, `categories` → `Category`, `status` stays. */
export function singular(code: string): string {
  if (/ies$/.test(code)) return code.replace(/ies$/, 'y');
  if (/(ss|us)$/.test(code)) return code;
  if (/(ches|shes|xes|ses)$/.test(code)) return code.replace(/es$/, '');
  return code.replace(/s$/, '');
}

/** The JSON schema of one field as reads answer it and writes take it. */
export function fieldSchema(field: FieldDef, valueSets: Map<string, string[]>): SchemaObject {
  const s: SchemaObject = {};
  switch (field.type) {
    case 'text':
      s.type = 'string';
      break;
    case 'email':
      s.type = 'string';
      s.format = 'email';
      break;
    case 'integer':
      s.type = 'integer';
      break;
    case 'numeric':
      s.type = 'number';
      break;
    case 'date':
      s.type = 'string';
      s.description = 'A date (YYYY-MM-DD) or date-time (ISO 8601)';
      break;
    case 'boolean':
      s.type = 'boolean';
      break;
    case 'select': {
      s.type = 'string';
      const values = field.valueSet ? valueSets.get(field.valueSet) : undefined;
      if (values && values.length > 0) s.enum = [...values];
      s.description = `A code of the value set ${field.valueSet ?? '(none)'}`;
      break;
    }
    case 'json':
      s.description = 'Any JSON value';
      break;
  }
  if (field.maxLength !== undefined) s.maxLength = field.maxLength;
  if (field.min !== undefined) s.minimum = field.min;
  if (field.max !== undefined) s.maximum = field.max;
  if (field.pattern !== undefined) s.pattern = field.pattern;
  if (field.references) {
    const ref = `references ${field.references.entity}.${field.references.field}`;
    s.description = s.description ? `${s.description}; ${ref}` : ref;
  }
  if (field.unique) s.description = s.description ? `${s.description}; unique` : 'Unique in the tenant';
  if (field.readOnly) s.readOnly = true;
  // The key is set by the service and always answered; other optional fields may be NULL.
  if (!field.required && !field.readOnly && field.type !== 'json') {
    s.nullable = true;
    // OpenAPI 3.0.3: an enum of a nullable schema lists null itself.
    if (s.enum) s.enum = [...(s.enum as unknown[]), null];
  }
  return s;
}

/** Component names of an entity; `taken` are names already in the document. */
export function schemaNames(
  code: string,
  taken: Set<string>,
): { read: string; input: string; update: string } {
  let base = pascal(singular(code));
  if (taken.has(base) || taken.has(`${base}Input`) || taken.has(`${base}Update`)) base = `${base}Record`;
  return { read: base, input: `${base}Input`, update: `${base}Update` };
}

function entitySchemas(
  entity: EntityInfo,
  valueSets: Map<string, string[]>,
): { read: SchemaObject; input: SchemaObject; update: SchemaObject } {
  const visible = entity.fields.filter((f) => !f.hidden);
  const writable = visible.filter((f) => !f.readOnly);
  const props = (fields: FieldDef[]): Record<string, SchemaObject> =>
    Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f, valueSets)]));
  const inputs = (fields: FieldDef[]): Record<string, SchemaObject> =>
    Object.fromEntries(fields.map((f) => [f.name, inputFieldSchema(f, fieldSchema(f, valueSets))]));
  // D43: an update may send back what a read showed (the key, masked values); an unchanged echo is ignored.
  const echoes = Object.fromEntries(
    visible
      .filter((f) => f.readOnly)
      .map((f) => [
        f.name,
        { ...fieldSchema(f, valueSets), description: 'As read; ignored when unchanged (D43), else 400' },
      ]),
  );
  const title = entity.description ?? entity.code;
  const lastModified: SchemaObject = {
    type: 'string',
    format: 'date-time',
    description: 'The concurrency token (D24, D42): send it back on PUT, or as If-Match',
  };
  const required = writable.filter((f) => f.required).map((f) => f.name);
  // Write-only inputs (users.password): accepted on create and update, stored transformed, never answered.
  const secrets: Record<string, SchemaObject> = Object.fromEntries(
    secretInputsOf(entity).map((s) => [
      s.input,
      {
        type: 'string',
        format: 'password',
        writeOnly: true,
        minLength: s.minLength,
        maxLength: s.maxLength,
        description: `Write-only: stored as a hash in ${s.field}, never answered`,
      },
    ]),
  );
  return {
    read: {
      type: 'object',
      title,
      description:
        `A ${entity.code} record as reads answer it (fields the profile hides or projects out are absent; ` +
        'masked ones are masked)',
      properties: { ...props(visible), lastModified: { ...lastModified, readOnly: true, nullable: true } },
      required: [...visible.filter((f) => f.readOnly).map((f) => f.name), 'lastModified'],
    },
    input: {
      type: 'object',
      title: `${title} (create)`,
      properties: { ...inputs(writable), ...secrets },
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    },
    update: {
      type: 'object',
      title: `${title} (update)`,
      description: 'The changed fields and lastModified as read (or send the If-Match header instead)',
      // A record never saved by the service reads lastModified null, and that is its token (D42).
      properties: {
        ...echoes,
        ...inputs(writable),
        ...secrets,
        lastModified: { ...lastModified, nullable: true },
      },
      additionalProperties: false,
    },
  };
}

/** A deep copy of a JSON value. */
function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function withoutEntityCode(op: OperationObject): ParameterObject[] {
  return ((op.parameters ?? []) as ParameterObject[]).filter((p) => p.name !== 'entity_code');
}

function setJsonSchema(target: unknown, schema: object): void {
  const media = (target as { content?: Record<string, { schema?: unknown }> } | undefined)?.content?.[
    'application/json'
  ];
  if (media) media.schema = schema;
}

/** The value of `filters` typed by the entity's fields (deepObject, equality per field). */
function filtersParameter(entity: EntityInfo, valueSets: Map<string, string[]>): ParameterObject {
  const base = LIST_PARAMETERS[0];
  const properties = Object.fromEntries(
    entity.fields
      .filter((f) => !f.hidden && f.type !== 'json')
      .map((f) => {
        const s = fieldSchema(f, valueSets);
        return [
          f.name,
          {
            type: s.type === 'string' ? 'string' : s.type,
            ...(s.enum ? { enum: s.enum.filter((v) => v !== null) } : {}),
          },
        ];
      }),
  );
  const firstEnum = entity.fields.find(
    (f) => f.type === 'select' && f.valueSet && valueSets.get(f.valueSet)?.length,
  );
  const parameter: ParameterObject = {
    ...base,
    schema: { type: 'object', properties, additionalProperties: false },
    example: firstEnum ? { [firstEnum.name]: valueSets.get(firstEnum.valueSet!)![0] } : {},
  };
  return parameter;
}

/** Entities that get typed paths: supported, and not shadowed by a static route of the same path. */
export function documentedEntities(entities: EntityInfo[], paths: Record<string, unknown>): EntityInfo[] {
  return entities
    .filter((e) => e.supported && !(`/api/v1/${e.code}` in paths) && !(`/api/v1/${e.code}/{id}` in paths))
    .filter((e) => !Object.keys(paths).some((p) => p.startsWith(`/api/v1/${e.code}/`)))
    .sort((a, b) => a.code.localeCompare(b.code));
}

/**
 * `base` with the entities' schemas and typed paths added (a new object; `base` is not changed).
 * The generic routes stay documented for entities registered after the document was built.
 */
export function withEntities(base: OpenAPIObject, catalog: EntityCatalog): OpenAPIObject {
  const doc = copy(base);
  const collection = doc.paths[GENERIC_COLLECTION];
  const item = doc.paths[GENERIC_ITEM];
  if (!collection?.get || !collection.post || !item?.get || !item.put || !item.delete)
    return bulkPathLast(doc);
  const schemas = (doc.components ??= {}).schemas ?? (doc.components.schemas = {});
  const taken = new Set(Object.keys(schemas));
  const operationIds = new Set(
    Object.values(doc.paths).flatMap((p) =>
      Object.values(p as Record<string, OperationObject>).map((o) => o.operationId),
    ),
  );
  const tags = doc.tags ?? (doc.tags = []);
  const entities = documentedEntities(catalog.entities, doc.paths);
  for (const entity of entities) {
    const names = schemaNames(entity.code, taken);
    const one = pascal(singular(entity.code));
    const many = pascal(entity.code);
    const ids = {
      list: `list${many}`,
      create: `create${one}`,
      get: `get${one}`,
      update: `update${one}`,
      delete: `delete${one}`,
    };
    if (Object.values(ids).some((id) => operationIds.has(id)) || one === many) continue;
    const built = entitySchemas(entity, catalog.valueSets);
    schemas[names.read] = built.read;
    schemas[names.input] = built.input;
    schemas[names.update] = built.update;
    taken.add(names.read).add(names.input).add(names.update);
    Object.values(ids).forEach((id) => operationIds.add(id));
    const ref = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;
    const title = entity.description ?? entity.code;
    tags.push({
      name: entity.code,
      description: `${title}: entity \`${entity.code}\` of the object registry`,
    });

    const make = (generic: OperationObject, id: string, summary: string): OperationObject => {
      const op = copy(generic);
      op.operationId = id;
      op.summary = summary;
      op.tags = [entity.code];
      op.parameters = withoutEntityCode(op);
      (op as unknown as Record<string, unknown>)[ENTITY_EXTENSION] = entity.code;
      // Only supported entities get typed paths: the generic routes' 501 (D26) cannot happen here.
      delete op.responses['501'];
      return op;
    };
    const list = make(
      collection.get,
      ids.list,
      `List ${entity.code} (filters, limit, skip, sortBy, sortOrder)`,
    );
    list.parameters = (list.parameters as ParameterObject[]).map((p) =>
      p.name === 'filters' ? filtersParameter(entity, catalog.valueSets) : p,
    );
    setJsonSchema(list.responses['200'], successSchema(listResultSchema(ref(names.read))));
    const create = make(collection.post, ids.create, `Create a ${singular(entity.code)} record`);
    setJsonSchema(create.requestBody, ref(names.input));
    setJsonSchema(create.responses['201'], successSchema(ref(names.read)));
    const get = make(item.get, ids.get, `One ${singular(entity.code)} record by id (ETag)`);
    setJsonSchema(get.responses['200'], successSchema(ref(names.read)));
    const update = make(
      item.put,
      ids.update,
      `Update a ${singular(entity.code)} record (lastModified or If-Match)`,
    );
    setJsonSchema(update.requestBody, ref(names.update));
    setJsonSchema(update.responses['200'], successSchema(ref(names.read)));
    const remove = make(item.delete, ids.delete, `Soft-delete a ${singular(entity.code)} record`);
    // 409 on create is a unique value held by a concurrent write, on delete a restricting dependent:
    // an entity with neither cannot answer it.
    if (!entity.fields.some((f) => f.unique)) delete create.responses['409'];
    if (!entity.relations.some((r) => r.onDelete === 'restrict')) delete remove.responses['409'];
    setJsonSchema(remove.responses['200'], deleteSchema());

    doc.paths[`/api/v1/${entity.code}`] = { get: list, post: create };
    doc.paths[`/api/v1/${entity.code}/{id}`] = { get, put: update, delete: remove };
  }
  return bulkPathLast(withoutPrefilledExamples(doc));
}
