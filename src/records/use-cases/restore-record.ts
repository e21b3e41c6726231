import { Injectable } from '@nestjs/common';
import { ConflictError } from '../../common/errors/app-error';
import { assertCanPerform } from '../../profile/access/can-perform';
import { visibleFields, writableFieldNames } from '../../profile/policy/masking';
import type { ExpectedToken } from '../concurrency-token';
import type { RecordContext } from '../record-context';
import type { Row } from '../records-read.repository';
import { systemColumns } from '../validation';
import { RecordHistory } from './record-history';
import { UpdateRecord } from './update-record';

export interface RestoreResult {
  /** The record as a read shows it now, with its new lastModified. */
  record: Row;
  restoredVersion: number;
  /** Visible fields of that version the caller cannot write: left as they are. */
  skipped: string[];
}

/**
 * D56: a record's values of an earlier version written back as an update — through UpdateRecord,
 * so scope, row filter, validation, uniqueness, the concurrency token, invalidation and the event
 * are a save's — recorded as its own `entity.restored` audit entry. Only fields the caller may both
 * see and write are written; the visible others (read-only, outside writableFields, masked, system)
 * are reported as skipped; fields it cannot see are neither written nor named.
 */
@Injectable()
export class RestoreVersion {
  constructor(
    private readonly history: RecordHistory,
    private readonly update: UpdateRecord,
  ) {}

  async execute(
    ctx: RecordContext,
    id: number,
    version: number,
    expected: ExpectedToken,
  ): Promise<RestoreResult> {
    assertCanPerform('update', ctx);
    const { deleted } = await this.history.assertVisible(ctx, id);
    if (deleted)
      throw new ConflictError(
        `${ctx.entity.code} ${id} is deleted; undelete it before restoring a version`,
        null,
        'illegal_state',
      );
    const stored = await this.history.stored(ctx, id, version);
    const { entity, policy } = ctx;
    const visible = new Set(visibleFields(policy, entity.fields));
    const writable = new Set(writableFieldNames(policy, entity.fields));
    const system = systemColumns(entity);
    const body: Row = {};
    const skipped: string[] = [];
    for (const field of entity.fields) {
      if (!visible.has(field.name) || !Object.prototype.hasOwnProperty.call(stored.values, field.name))
        continue;
      if (field.column === entity.primaryKeyColumn) continue;
      const canWrite =
        writable.has(field.name) &&
        policy.masking[field.name] === undefined &&
        !system.has(field.column.toLowerCase());
      if (canWrite) body[field.name] = stored.values[field.name];
      else skipped.push(field.name);
    }
    const record = await this.update.execute(ctx, id, body, expected, {}, { event: 'entity.restored' });
    return { record, restoredVersion: version, skipped };
  }
}
