import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { DEMO_ENTITIES, type RegistryField } from './demo-data';

type Raw = Record<string, unknown>;

/** A column value in the field's JSON form, as the records core's audit entries hold it. */
function jsonValue(field: RegistryField, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  const text =
    value instanceof Date ? value.toISOString() : typeof value === 'string' ? value : JSON.stringify(value);
  switch (field.type) {
    case 'integer':
    case 'numeric':
      return Number(value);
    case 'date':
      return text.slice(0, 10);
    case 'json':
      return typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
    case 'boolean':
      return value === true || value === 1 || value === '1' || value === 't';
    case 'text':
    case 'email':
    case 'select':
      return typeof value === 'number' ? String(value) : text;
  }
}

const parse = (raw: unknown): Raw => {
  if (typeof raw !== 'string') return raw !== null && typeof raw === 'object' ? (raw as Raw) : {};
  try {
    return JSON.parse(raw) as Raw;
  } catch {
    return {};
  }
};

/**
 * The first version of every demo record of a tenant (issue 34 #14): an `entity.created` audit
 * entry, version 1, its `after` the whole record as the records core writes one on create, so
 * history starts at version 1 and "restore version 1" works on a freshly seeded database. Written
 * for the seed's rows that no change has touched yet (audit data `created_by: seed`, no version)
 * and that have no entry: a second run, or a run on a database seeded before, writes only what is
 * missing.
 */
export async function seedCreatedEntries(
  em: EntityManager,
  entityCode: string,
  tenant: number,
  at: string,
): Promise<number> {
  const entity = DEMO_ENTITIES.find((e) => e.code === entityCode);
  if (!entity) throw new Error(`Unknown demo entity ${entityCode}`);
  const p = entity.prefix;
  const fields = entity.payload.fields.filter((f) => !f.hidden);
  let rows = em
    .createQueryBuilder()
    .select(`t.${entity.identifier}`, '__id')
    .addSelect(`t.${p}audit_data`, '__audit')
    .from(entity.table, 't')
    .where(`t.${p}tenant_id = :tenant`, { tenant });
  for (const f of fields) rows = rows.addSelect(`t.${f.column}`, f.column);
  const found: Raw[] = await rows.orderBy(`t.${entity.identifier}`, 'ASC').getRawMany();
  const logged = new Set(
    (
      await em
        .createQueryBuilder()
        .select('a.aud_record_id', 'id')
        .from('app_audit_logs', 'a')
        .where('a.aud_tenant_id = :tenant AND a.aud_entity_code = :code', { tenant, code: entityCode })
        .getRawMany<{ id: unknown }>()
    ).map((r) => String(r.id)),
  );
  const entries = found
    .filter((r) => {
      const audit = parse(r.__audit);
      return audit.created_by === 'seed' && audit.version === undefined && !logged.has(String(r.__id));
    })
    .map((r) => {
      const after: Raw = {};
      for (const f of fields) after[f.name] = jsonValue(f, r[f.column]);
      return {
        aud_tenant_id: tenant,
        aud_user_id: null,
        aud_event: 'entity.created',
        aud_entity_code: entityCode,
        aud_record_id: String(r.__id),
        aud_before: null,
        aud_after: JSON.stringify(after),
        aud_request_id: 'seed',
        aud_at: at,
        aud_user_email: 'seed',
        aud_version: 1,
        aud_changed: JSON.stringify(Object.keys(after).filter((k) => after[k] !== null)),
        aud_operation_id: randomUUID(),
      };
    });
  // Rows of one statement per 100 (13 columns: well below every dialect's parameter limit).
  for (let i = 0; i < entries.length; i += 100) {
    const chunk = entries.slice(i, i + 100);
    await em
      .createQueryBuilder()
      .insert()
      .into('app_audit_logs', Object.keys(chunk[0]))
      .values(chunk)
      .execute();
  }
  return entries.length;
}
