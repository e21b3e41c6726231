import type { DataSource } from 'typeorm';
import type { KeyRing } from '../../config/key-ring';
import {
  decryptConnectionString,
  encryptConnectionString,
  needsReencryption,
  storedKeyId,
  type SecretPurpose,
} from '../connections/connection-string.crypto';

/**
 * Every column that holds a secret encrypted at rest (D3, D57), one entry each. `npm run
 * keys:rotate` walks them all; a new kind of stored secret adds its line here.
 */
export interface StoredSecretColumn {
  /** What the secrets are, as GET /api/v1/admin/keys names them. */
  kind: string;
  table: string;
  /** The row's integer primary key. */
  key: string;
  column: string;
  /** The HKDF purpose the values are encrypted under. */
  purpose: SecretPurpose;
}

export const STORED_SECRET_COLUMNS: readonly StoredSecretColumn[] = [
  {
    kind: 'connections',
    table: 'app_connections',
    key: 'con_id',
    column: 'con_connection_string',
    purpose: 'mtb:app_connections:v1',
  },
  {
    kind: 'webhookSecrets',
    table: 'app_webhooks',
    key: 'whk_id',
    column: 'whk_secret',
    purpose: 'mtb:app_webhooks:v1',
  },
];

export interface RotationCounts {
  /** Rows read. */
  scanned: number;
  /** Rewritten under the current key by this run. */
  reencrypted: number;
  /** Already under the current key (an earlier or interrupted run did them): left alone. */
  current: number;
  /** Empty: nothing to encrypt. */
  empty: number;
  /** Changed by someone else between the read and the write: left for the next run. */
  changed: number;
  /** Decrypted with none of the accepted keys: left as they are, and named in `failedKeys`. */
  failed: number;
  failedKeys: string[];
}

const BATCH = 100;

/** One column's rows in pages of BATCH by key (every tenant's: an operator's pass, never a tenant read). */
async function* secretPages(
  ds: DataSource,
  target: StoredSecretColumn,
): AsyncGenerator<Array<{ id: number | string; value: string | null }>> {
  let after = 0;
  for (;;) {
    const rows = await ds
      .createQueryBuilder()
      .select(`t.${target.key}`, 'id')
      .addSelect(`t.${target.column}`, 'value')
      .from(target.table, 't')
      .where(`t.${target.key} > :after`, { after })
      .orderBy(`t.${target.key}`, 'ASC')
      .limit(BATCH)
      .getRawMany<{ id: number | string; value: string | null }>();
    if (rows.length === 0) return;
    after = Number(rows[rows.length - 1].id);
    yield rows;
  }
}

function emptyCounts(): RotationCounts {
  return { scanned: 0, reencrypted: 0, current: 0, empty: 0, changed: 0, failed: 0, failedKeys: [] };
}

/**
 * Re-encrypts one column's values under `keys.current`. This is an operator's maintenance pass over
 * the whole table (every tenant's rows, live or deleted, like a migration), not a tenant's read; the
 * values never leave the process. Idempotent and resumable: values already under the current key
 * are skipped, and each row is written on its own with a compare-and-set on the old value, so a run
 * stopped at any point, or a row edited meanwhile, is simply taken up by the next run.
 */
export async function rotateColumn(
  ds: DataSource,
  target: StoredSecretColumn,
  keys: KeyRing,
  progress: (counts: RotationCounts) => void = () => undefined,
): Promise<RotationCounts> {
  const counts = emptyCounts();
  for await (const rows of secretPages(ds, target)) {
    for (const row of rows) {
      const id = Number(row.id);
      counts.scanned++;
      const stored = typeof row.value === 'string' ? row.value : '';
      if (stored.trim() === '') {
        counts.empty++;
        continue;
      }
      if (!needsReencryption(stored, keys)) {
        counts.current++;
        continue;
      }
      let plain: string;
      try {
        plain = decryptConnectionString(stored, keys, target.purpose);
      } catch {
        counts.failed++;
        counts.failedKeys.push(`${target.table}.${target.key}=${id}`);
        continue;
      }
      const result = await ds
        .createQueryBuilder()
        .update(target.table)
        .set({ [target.column]: encryptConnectionString(plain, keys, target.purpose) })
        .where(`${target.key} = :id`, { id })
        .andWhere(`${target.column} = :old`, { old: row.value })
        .execute();
      if ((result.affected ?? 1) > 0) counts.reencrypted++;
      else counts.changed++;
    }
    progress(counts);
  }
  return counts;
}

/** Every stored secret column, one after another; the counts per column. */
export async function rotateStoredSecrets(
  ds: DataSource,
  keys: KeyRing,
  progress: (target: StoredSecretColumn, counts: RotationCounts) => void = () => undefined,
  columns: readonly StoredSecretColumn[] = STORED_SECRET_COLUMNS,
): Promise<Map<StoredSecretColumn, RotationCounts>> {
  const all = new Map<StoredSecretColumn, RotationCounts>();
  for (const target of columns) {
    all.set(target, await rotateColumn(ds, target, keys, (c) => progress(target, c)));
  }
  return all;
}

/** How one column's stored secrets stand against the key ring (GET /api/v1/admin/keys). */
export interface KeyIdCounts {
  /** Non-empty values per key id (`enc:v2:<kid>:…`) among the accepted keys. */
  byKey: Record<string, number>;
  /** `enc:v1:` values (no key id) that an accepted key decrypts: keys:rotate rewrites them. */
  legacy: number;
  /** Values no accepted key reads (an unknown key id, a wrong key, a malformed value). */
  unreadable: number;
  empty: number;
  total: number;
}

/**
 * Counts one column's values by the key id they name — the reading keys:rotate does (storedKeyId),
 * without writing anything. Like the rotation, an operator's pass over every tenant's rows; only
 * counts leave it, never a value.
 */
export async function countKeyIds(
  ds: DataSource,
  target: StoredSecretColumn,
  keys: KeyRing,
): Promise<KeyIdCounts> {
  const counts: KeyIdCounts = { byKey: {}, legacy: 0, unreadable: 0, empty: 0, total: 0 };
  const accepted = new Set(keys.all.map((k) => k.id));
  for await (const rows of secretPages(ds, target)) {
    for (const row of rows) {
      counts.total++;
      const stored = typeof row.value === 'string' ? row.value.trim() : '';
      if (stored === '') {
        counts.empty++;
        continue;
      }
      const kid = storedKeyId(stored);
      if (kid !== undefined) {
        if (accepted.has(kid)) counts.byKey[kid] = (counts.byKey[kid] ?? 0) + 1;
        else counts.unreadable++;
        continue;
      }
      try {
        decryptConnectionString(stored, keys, target.purpose);
        counts.legacy++;
      } catch {
        counts.unreadable++;
      }
    }
  }
  return counts;
}
