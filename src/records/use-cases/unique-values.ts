import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import type { RecordsWriteRepository } from '../records-write.repository';
import type { WriteTx } from '../write-tx';
import type { AcceptedValue } from '../validation';
import { toDb } from '../values';
import { uniqueKey } from './write-values';

/**
 * The unique values of a bulk create's rows already held in the table (one query per field and
 * batch, in the write's transaction after the rows' value locks), kept current as the rows insert:
 * what existsWithValue would answer for each row, without a query per row (D51, D53). Text-like
 * fields only; any other value is undefined (the per-row query answers it).
 */
export class UniqueValues {
  private readonly taken = new Map<string, Set<string>>();
  /** The values asked about, per field: any other is not known here. */
  private readonly asked = new Map<string, Set<string>>();

  static async load(
    repository: RecordsWriteRepository,
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    rows: AcceptedValue[][],
  ): Promise<UniqueValues> {
    const known = new UniqueValues();
    for (const field of entity.fields.filter(prechecked)) {
      const values = new Set<string>();
      for (const row of rows)
        for (const v of row) {
          const db = v.field.name === field.name ? toDb(field, v.value) : undefined;
          if (typeof db === 'string') values.add(db);
        }
      known.asked.set(field.name, values);
      known.taken.set(
        field.name,
        await repository.takenValues(tx.data, entity, tenantId, field, [...values]),
      );
    }
    return known;
  }

  /** Whether a live row holds the value (as existsWithValue); undefined when not known here. */
  answers(field: FieldDef, dbValue: unknown): boolean | undefined {
    const set = this.taken.get(field.name);
    if (!set || typeof dbValue !== 'string' || !this.asked.get(field.name)?.has(dbValue)) return undefined;
    return set.has(dbValue);
  }

  /** A row inserted in the transaction: its unique values are taken from now on. */
  add(values: AcceptedValue[]): void {
    for (const { field, value } of values) {
      const db = toDb(field, value);
      const set = this.taken.get(field.name);
      if (set && typeof db === 'string') set.add(uniqueKey(field, db));
    }
  }
}

function prechecked(field: FieldDef): boolean {
  return field.unique === true && ['text', 'email', 'select'].includes(field.type);
}
