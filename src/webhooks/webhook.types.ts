/** A webhook as its tenant's administrators see it (D54); the secret never leaves after creation. */
export interface WebhookView {
  code: string;
  url: string;
  events: string[];
  profileCode: string | null;
  description: string | null;
  active: boolean;
  /** Why the service disabled it (24 h of failures), or null. */
  disabledReason: string | null;
  /** The first failure since the last success, or null. */
  failingSince: string | null;
  lastModified: string | null;
}

/** A webhook row as the worker needs it (the secret still encrypted). */
export interface WebhookRow {
  id: number;
  tenantId: string;
  code: string;
  url: string;
  events: string[];
  secretEncrypted: string | null;
  profileCode: string | null;
  description: string | null;
  active: boolean;
  cursor: number;
  failingSince: number | null;
  disabledReason: string | null;
  lastModified: number | null;
}

export const DELIVERY_STATUSES = ['PENDING', 'DELIVERING', 'DELIVERED', 'DEAD'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One delivery as the delivery log shows it. */
export interface DeliveryView {
  id: number;
  webhookId: string;
  eventId: string;
  type: string;
  entity: string;
  recordId: number;
  sequence: number;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  lastResponse: string | null;
  occurredAt: string;
  createdAt: string;
  deliveredAt: string | null;
}
