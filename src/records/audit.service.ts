import { Injectable, Logger } from '@nestjs/common';
import type { AuditPolicy } from '../profile/policy/policy.model';
import type { WriteTx } from './write-tx';
import { toDbTimestamp } from '../database/dialect/timestamps';

export type EntityAuditEvent = 'entity.created' | 'entity.updated' | 'entity.deleted' | 'entity.restored';

export interface EntityAuditEntry {
  event: EntityAuditEvent;
  tenantId: string;
  userId: number;
  entityCode: string;
  recordId: number;
  /** Field values before the change (hidden fields never included); null on create. */
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  requestId: string;
  /** Epoch ms of the change. */
  at: number;
  /** The actor's e-mail address: who, as history shows it (D56). */
  userEmail: string;
  /** The record's version after the change (its audit data's `version`, D56). */
  version: number;
  /** The fields the change touched (D56); empty on a delete. */
  changed: string[];
  /** Shared by every entry of one write: a delete and its cascade (D56's undelete). */
  operationId: string;
}

/** What the structured audit log line of a change says (after its commit). */
export type AuditLine = Pick<
  EntityAuditEntry,
  'event' | 'tenantId' | 'userId' | 'entityCode' | 'recordId' | 'requestId'
>;

/** Whether the profile's audit flags (spec 2.6.1, D29) ask for this event. */
export function auditWanted(policy: AuditPolicy, event: EntityAuditEvent): boolean {
  if (!policy.enabled) return false;
  switch (event) {
    case 'entity.created':
      return policy.logCreations;
    case 'entity.updated':
    case 'entity.restored':
      return policy.logUpdates;
    case 'entity.deleted':
      return policy.logDeletions;
  }
}

/**
 * Audit of entity mutations (spec §4.3 create 5, update 5, delete 6; §6; D29): a row of
 * `app_audit_logs` written in the mutation's transaction, and a structured log event once it has
 * committed. Both follow the profile's audit flags.
 */
@Injectable()
export class EntityAuditService {
  private readonly logger = new Logger('EntityAudit');

  /**
   * The `app_audit_logs` row, inside the transaction of the change: held by the transaction and
   * written with the others of the write in one multi-row INSERT before its commit (a bulk write's
   * rows no longer pay a round trip each; a savepoint undone drops its own, as with events).
   */
  record(tx: WriteTx, entry: EntityAuditEntry): void {
    tx.audit(auditRow(entry));
  }

  /** The structured log event (spec §6: tenantId and userId on every entry); after the commit. */
  log(entry: AuditLine): void {
    const { event, tenantId, userId, entityCode, recordId, requestId } = entry;
    this.logger.log({ event, tenantId, userId, entityCode, recordId, requestId }, event);
  }
}

/** An entry as its `app_audit_logs` row (D29, D56). */
export function auditRow(entry: EntityAuditEntry): Record<string, unknown> {
  return {
    aud_tenant_id: Number(entry.tenantId),
    aud_user_id: entry.userId,
    aud_event: entry.event,
    aud_entity_code: entry.entityCode,
    aud_record_id: String(entry.recordId),
    aud_before: entry.before === null ? null : JSON.stringify(entry.before),
    aud_after: entry.after === null ? null : JSON.stringify(entry.after),
    aud_request_id: entry.requestId,
    aud_at: toDbTimestamp(entry.at),
    aud_user_email: entry.userEmail,
    aud_version: entry.version,
    aud_changed: JSON.stringify(entry.changed),
    aud_operation_id: entry.operationId,
  };
}
