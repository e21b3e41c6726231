import { Injectable } from '@nestjs/common';
import { applyProjection } from '../profile/policy/masking';
import { normalisePolicy, type EntityPolicy } from '../profile/policy/policy.model';
import { ProfileLoaderService } from '../profile/profile-loader.service';
import { ProfileRepository } from '../profile/profile.repository';
import type { OutboxEvent } from '../records/outbox/outbox.types';
import { RegistryService } from '../registry/registry.service';
import type { FieldDef } from '../registry/registry.types';
import type { WebhookRow } from './webhook.types';

/**
 * The body of a delivery (D54): `{type, timestamp, data: {tenantId, entity, recordId, sequence,
 * record, changes}}`. `record` is the event's record shaped as a read by the webhook's profile —
 * its projection and masking — when that profile is the event entity's, else by the entity's own
 * profile; hidden fields are never in an event, and without a profile there is no record (null).
 * `changes` names only fields the shaped record shows.
 * Rendered once, when the relay creates the delivery, so every attempt sends the same bytes.
 */
@Injectable()
export class WebhookPayloads {
  constructor(
    private readonly registry: RegistryService,
    private readonly profiles: ProfileRepository,
    private readonly loader: ProfileLoaderService,
  ) {}

  /** `memo` keeps the shapes of one relay pass (one profile lookup per entity, not per event). */
  async render(webhook: WebhookRow, event: OutboxEvent, memo = new Map<string, unknown>()): Promise<string> {
    let record: Record<string, unknown> | null = null;
    if (event.record) {
      const key = `${webhook.id}:${event.entity}`;
      if (!memo.has(key)) memo.set(key, await this.shape(webhook, event));
      const shaped = memo.get(key) as Awaited<ReturnType<WebhookPayloads['shape']>>;
      if (shaped)
        record = { id: event.recordId, ...applyProjection(event.record, shaped.policy, shaped.fields) };
    }
    // A field the profile does not show is not named either (nor a write-only input).
    const shown = record;
    const changes = shown ? event.changes.filter((c) => c !== 'id' && c in shown) : [];
    return JSON.stringify({
      type: event.type,
      timestamp: new Date(event.occurredAt).toISOString(),
      data: {
        tenantId: event.tenantId,
        entity: event.entity,
        recordId: event.recordId,
        sequence: event.sequence,
        eventId: event.id,
        record,
        changes,
      },
    });
  }

  private async shape(
    webhook: WebhookRow,
    event: OutboxEvent,
  ): Promise<{ policy: EntityPolicy; fields: readonly FieldDef[] } | null> {
    const entity = await this.registry.resolve(event.tenantId, event.entity);
    if (!entity) return null;
    const fields = entity.fields.filter((f) => !f.hidden);
    if (webhook.profileCode) {
      const row = await this.profiles.findByCode(webhook.tenantId, webhook.profileCode);
      if (row && row.prf_object_code === event.entity) {
        try {
          const policy = normalisePolicy({
            modeCode: row.prf_mode_code,
            policy: row.prf_policy,
            tenantPolicy: row.prf_policy_tenantpolicy,
            projection: row.prf_policy_projection,
          });
          return { policy, fields };
        } catch {
          // A profile that cannot be read shapes nothing: no record rather than an unmasked one.
          return null;
        }
      }
    }
    const loaded = await this.loader.loadProfile({ entityCode: event.entity, tenantId: event.tenantId });
    return loaded ? { policy: loaded.policy, fields } : null;
  }
}
