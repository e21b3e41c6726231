/** D54's event types: `<entity>.created|updated|deleted|restored`. */
export const EVENT_ACTIONS = ['created', 'updated', 'deleted', 'restored'] as const;
export type EventAction = (typeof EVENT_ACTIONS)[number];

/**
 * An event a write adds to its transaction (WriteTx.emit); the outbox gives it its id and sequence
 * as the transaction's last statements.
 */
export interface PendingEvent {
  tenantId: string;
  action: EventAction;
  entityCode: string;
  recordId: number;
  occurredAt: number;
  actor: { userId: number | null; email: string | null };
  requestId: string | null;
  /** Names of the fields the write set or changed (write-only inputs by their input name). */
  changes: string[];
  /** The record as stored after the write (before it, for a delete); hidden fields never in it. */
  record: Record<string, unknown> | null;
}

/** A committed event as the outbox keeps it (D54). */
export interface OutboxEvent {
  id: string;
  tenantId: string;
  sequence: number;
  type: string;
  entity: string;
  recordId: number;
  occurredAt: number;
  actor: { userId: number | null; email: string | null };
  requestId: string | null;
  changes: string[];
  record: Record<string, unknown> | null;
}
