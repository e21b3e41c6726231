import { Injectable } from '@nestjs/common';
import { assertCanPerform } from '../../profile/access/can-perform';
import { ValidationError } from '../../common/errors/app-error';
import { toDbTimestamp } from '../../database/dialect/timestamps';
import type { RecordContext } from '../record-context';
import type { Row } from '../records-read.repository';
import { writeScope } from '../scope';
import { checkPayload } from '../validation';
import { toDb } from '../values';
import { RecordWriteSupport, snapshotFields, type WriteHooks } from './write-support';

/**
 * Create a record (spec §4.3 create rules 1-7, D4, D29): validation, unique-value locks, the checks
 * that need the database, the INSERT with tenant and audit columns, the audit row in the same
 * transaction, then cache invalidation and the collection event. Answers the record as a read
 * shows it (D43).
 */
@Injectable()
export class CreateRecord {
  constructor(private readonly support: RecordWriteSupport) {}

  async execute(ctx: RecordContext, body: unknown, hooks: WriteHooks = {}): Promise<Row> {
    assertCanPerform('create', ctx);
    const { entity, policy } = ctx;
    const s = this.support;
    const checked = checkPayload(entity, policy, body, 'create');
    const secrets = checked.errors.length === 0 ? await s.transformSecrets(entity, checked.secrets) : [];
    const now = Date.now();
    const fields = snapshotFields(entity);
    const { id, entry, record } = await s.withTransaction(ctx, async (tx) => {
      await s.lockUniqueValues(tx, entity, ctx.tenantId, checked.values);
      const errors = [
        ...checked.errors,
        ...(await s.checkAgainstDb(tx, entity, ctx.tenantId, checked.values)),
      ];
      if (errors.length > 0) throw new ValidationError('Validation failed', errors);
      const row: Row = {};
      for (const v of checked.values) row[v.field.column] = toDb(v.field, v.value);
      for (const secret of secrets) row[secret.column] = secret.value;
      const cols = entity.columns;
      row[cols.tenant] = Number(ctx.tenantId);
      if (!(cols.status in row)) row[cols.status] = 1;
      row[cols.isDeleted] = 0;
      row[cols.auditData] = JSON.stringify({
        created_by: ctx.user.email,
        created_at: new Date(now).toISOString(),
        version: 1,
      });
      row[cols.lastModified] = toDbTimestamp(now);
      const newId = await s.repository.insert(tx.data, entity, row);
      // The row as stored (defaults, rounding), read back in the transaction.
      const stored = await s.repository.load(tx.data, entity, writeScope(ctx, entity, policy), fields, newId);
      const after = stored ? s.typed(fields, stored.fields) : s.snapshot(entity, newId, checked.values);
      const auditEntry = s.entry(ctx, 'entity.created', newId, null, after, now);
      await s.recordAudit(ctx, tx.config, auditEntry);
      const set = [...checked.values.map((v) => v.field.name), ...secrets.map((x) => x.input)];
      s.emit(tx, ctx, entity, 'created', newId, set, after, now);
      await hooks.beforeCommit?.(tx, newId);
      return { id: newId, entry: auditEntry, record: after };
    });
    await s.afterCommit(ctx, entry, [{ entity, ids: [id] }]);
    return s.present(entity, policy, id, record, new Date(now).toISOString());
  }
}
