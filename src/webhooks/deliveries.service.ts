import { Injectable, Logger } from '@nestjs/common';
import { ConflictError, NotFoundError, ValidationError, type FieldError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import { DatabaseService } from '../database/database.service';
import { RecordsWriteRepository } from '../records/records-write.repository';
import { DeliveriesRepository, type Delivery } from './deliveries.repository';
import { DELIVERY_STATUSES, type DeliveryStatus, type DeliveryView } from './webhook.types';
import { WebhookWorker } from './webhook-worker';
import { assertWebhookAdmin, WebhooksService } from './webhooks.service';

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function deliveryView(d: Delivery): DeliveryView {
  return {
    id: d.id,
    webhookId: d.uid,
    eventId: d.eventUid,
    type: d.type,
    entity: d.entityCode,
    recordId: d.recordId,
    sequence: d.sequence,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === 'PENDING' ? iso(d.nextAttemptAt) : null,
    lastAttemptAt: iso(d.lastAttemptAt),
    lastStatus: d.lastStatus,
    lastError: d.lastError,
    lastResponse: d.lastResponse,
    occurredAt: new Date(d.occurredAt).toISOString(),
    createdAt: new Date(d.createdAt).toISOString(),
    deliveredAt: iso(d.deliveredAt),
  };
}

/** The delivery log of a webhook and its retry (D54), for the tenant's webhook administrators. */
@Injectable()
export class DeliveriesService {
  private readonly logger = new Logger('Webhooks');

  constructor(
    private readonly webhooks: WebhooksService,
    private readonly deliveries: DeliveriesRepository,
    private readonly worker: WebhookWorker,
    private readonly writes: RecordsWriteRepository,
    private readonly database: DatabaseService,
  ) {}

  async list(
    user: AuthUser,
    code: string,
    query: { status?: string; limit?: string; before?: string },
  ): Promise<DeliveryView[]> {
    assertWebhookAdmin(user);
    const webhook = await this.webhooks.find(user.tenantId, code);
    const problems: FieldError[] = [];
    let status: DeliveryStatus | undefined;
    if (query.status !== undefined && query.status !== '') {
      const s = query.status.toUpperCase() as DeliveryStatus;
      if (DELIVERY_STATUSES.includes(s)) status = s;
      else problems.push({ field: 'status', error: `must be one of ${DELIVERY_STATUSES.join(', ')}` });
    }
    let limit = 50;
    if (query.limit !== undefined && query.limit !== '') {
      limit = /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : NaN;
      if (!(limit >= 1 && limit <= 200))
        problems.push({ field: 'limit', error: 'must be an integer from 1 to 200' });
    }
    let before: number | undefined;
    if (query.before !== undefined && query.before !== '') {
      before = /^\d{1,9}$/.test(query.before) ? Number(query.before) : NaN;
      if (!(before >= 1)) problems.push({ field: 'before', error: 'must be a delivery id' });
    }
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const rows = await this.deliveries.list(user.tenantId, webhook.id, { status, limit, beforeId: before });
    return rows.map(deliveryView);
  }

  /** Sends a delivery again, dead or not, with its same webhook-id; 409 while it is being sent. */
  async retry(user: AuthUser, code: string, rawId: string): Promise<DeliveryView> {
    assertWebhookAdmin(user);
    const webhook = await this.webhooks.find(user.tenantId, code);
    const id = /^\d{1,9}$/.test(rawId) ? Number(rawId) : NaN;
    const found =
      Number.isSafeInteger(id) && id > 0 ? await this.deliveries.find(user.tenantId, webhook.id, id) : null;
    if (!found) throw new NotFoundError(`Delivery ${rawId} not found`);
    const queued = await this.writes.transaction(this.database.dataSource, (tx) =>
      this.deliveries.requeue(user.tenantId, webhook.id, id, Date.now(), tx.config),
    );
    if (!queued) throw new ConflictError(`Delivery ${id} is being sent now; retry later`, null, 'busy');
    this.logger.log(
      { event: 'webhook_replay', tenantId: user.tenantId, webhook: code, deliveryId: id },
      'webhook_replay',
    );
    this.worker.wake();
    return deliveryView((await this.deliveries.find(user.tenantId, webhook.id, id))!);
  }
}
