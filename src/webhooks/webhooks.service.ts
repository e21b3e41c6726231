import { Injectable, Logger } from '@nestjs/common';
import {
  AuthorizationError,
  ConflictError,
  NotFoundError,
  ValidationError,
  type FieldError,
} from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import type { AuthUser } from '../common/request-context';
import { encryptConnectionString } from '../database/connections/connection-string.crypto';
import { toDbTimestamp } from '../database/dialect/timestamps';
import { valueLockName } from '../database/dialect/value-lock';
import { hasPermission } from '../profile/access/permissions';
import { ProfileRepository } from '../profile/profile.repository';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import { RecordsWriteRepository } from '../records/records-write.repository';
import { RegistryService } from '../registry/registry.service';
import { DatabaseService } from '../database/database.service';
import { parsePatterns } from './event-patterns';
import { newWebhookSecret } from './signature';
import { urlProblem } from './ssrf';
import type { WebhookRow, WebhookView } from './webhook.types';
import { WebhooksRepository } from './webhooks.repository';
import { storedSecretKeyRing } from '../config/key-ring';

/** D54: `admin:webhooks` or `admin:system` (wildcards count, D9). */
export const WEBHOOK_ADMIN_PERMISSIONS = ['admin:webhooks', 'admin:system'] as const;

export function assertWebhookAdmin(user: AuthUser): void {
  if (!WEBHOOK_ADMIN_PERMISSIONS.some((p) => hasPermission(user.permissions, p)))
    throw new AuthorizationError(`Permission ${WEBHOOK_ADMIN_PERMISSIONS.join(' or ')} required`);
}

export const WEBHOOK_CODE = /^[A-Za-z0-9_.-]{1,100}$/;
const CREATE_KEYS = ['code', 'url', 'events', 'profileCode', 'description'];
const UPDATE_KEYS = ['url', 'events', 'profileCode', 'description', 'active', 'rotateSecret'];

function bodyObject(
  body: unknown,
  allowed: readonly string[],
  problems: FieldError[],
): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    problems.push({ field: 'body', error: 'must be a JSON object' });
    return {};
  }
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b))
    if (!allowed.includes(k))
      problems.push({ field: k, error: `is not a field of a webhook (${allowed.join(', ')})` });
  return b;
}

export function toView(row: WebhookRow): WebhookView {
  return {
    code: row.code,
    url: row.url,
    events: row.events,
    profileCode: row.profileCode,
    description: row.description,
    active: row.active,
    disabledReason: row.disabledReason,
    failingSince: row.failingSince === null ? null : new Date(row.failingSince).toISOString(),
    lastModified: row.lastModified === null ? null : new Date(row.lastModified).toISOString(),
  };
}

/**
 * Webhooks as tenant configuration (D54): validation, the generated secret (shown once, kept
 * encrypted as D3 keeps connection strings), and the tenant's rows only. The caller's permission
 * is checked here, by every method, whatever route calls it.
 */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger('Webhooks');

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly webhooks: WebhooksRepository,
    private readonly registry: RegistryService,
    private readonly profiles: ProfileRepository,
    private readonly outbox: OutboxRepository,
    private readonly writes: RecordsWriteRepository,
    private readonly database: DatabaseService,
  ) {}

  async list(user: AuthUser): Promise<WebhookView[]> {
    assertWebhookAdmin(user);
    return (await this.webhooks.list(user.tenantId)).map(toView);
  }

  async get(user: AuthUser, code: string): Promise<WebhookView> {
    assertWebhookAdmin(user);
    return toView(await this.find(user.tenantId, code));
  }

  async find(tenantId: string, code: string): Promise<WebhookRow> {
    const row = WEBHOOK_CODE.test(code) ? await this.webhooks.findByCode(tenantId, code) : null;
    if (!row) throw new NotFoundError(`Webhook ${code} not found`);
    return row;
  }

  async create(user: AuthUser, body: unknown): Promise<WebhookView & { secret: string }> {
    assertWebhookAdmin(user);
    const problems: FieldError[] = [];
    const b = bodyObject(body, CREATE_KEYS, problems);
    const code = b.code;
    if (typeof code !== 'string' || !WEBHOOK_CODE.test(code))
      problems.push({ field: 'code', error: 'must be 1-100 letters, digits, _ . or -' });
    const values = await this.checkValues(user.tenantId, b, problems, true);
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const secret = newWebhookSecret();
    const now = Date.now();
    const row = await this.writes.transaction(this.database.dataSource, async (tx) => {
      // One live webhook per code in a tenant: the code's lock serialises two creators.
      await this.writes.lockValues(tx, [
        valueLockName({
          table: 'app_webhooks',
          tenantId: user.tenantId,
          column: 'whk_code',
          value: String(code),
        }),
      ]);
      if (await this.webhooks.findByCode(user.tenantId, code as string, tx.config))
        throw new ConflictError(`Webhook ${String(code)} already exists`, null, 'duplicate_value');
      // A new webhook hears of the events committed from now on.
      const cursor = await this.outbox.lastSequence(user.tenantId);
      await this.webhooks.insert(tx.config, user.tenantId, {
        whk_code: code,
        ...values,
        whk_secret: encryptConnectionString(
          secret,
          storedSecretKeyRing(this.config.crypto),
          'mtb:app_webhooks:v1',
        ),
        whk_cursor: cursor,
        whk_audit_data: JSON.stringify({ created_by: user.email, created_at: new Date(now).toISOString() }),
        whk_last_modified: toDbTimestamp(now),
      });
      return this.webhooks.findByCode(user.tenantId, code as string, tx.config);
    });
    this.logger.log({ event: 'webhook_created', tenantId: user.tenantId, webhook: code }, 'webhook_created');
    return { ...toView(row!), secret };
  }

  async update(user: AuthUser, code: string, body: unknown): Promise<WebhookView & { secret?: string }> {
    assertWebhookAdmin(user);
    const existing = await this.find(user.tenantId, code);
    const problems: FieldError[] = [];
    const b = bodyObject(body, UPDATE_KEYS, problems);
    if (problems.length === 0 && Object.keys(b).length === 0)
      problems.push({ field: 'body', error: 'names no field to change' });
    const values = await this.checkValues(user.tenantId, b, problems, false);
    if (b.active !== undefined && typeof b.active !== 'boolean')
      problems.push({ field: 'active', error: 'must be true or false' });
    if (b.rotateSecret !== undefined && typeof b.rotateSecret !== 'boolean')
      problems.push({ field: 'rotateSecret', error: 'must be true or false' });
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const now = Date.now();
    const set: Record<string, unknown> = { ...values, whk_last_modified: toDbTimestamp(now) };
    if (b.active === true)
      Object.assign(set, { whk_status: 1, whk_disabled_reason: null, whk_failing_since: null });
    if (b.active === false) Object.assign(set, { whk_status: 0 });
    const secret = b.rotateSecret === true ? newWebhookSecret() : undefined;
    if (secret)
      set.whk_secret = encryptConnectionString(
        secret,
        storedSecretKeyRing(this.config.crypto),
        'mtb:app_webhooks:v1',
      );
    const changed = await this.writes.transaction(this.database.dataSource, (tx) =>
      this.webhooks.update(user.tenantId, existing.id, set, tx.config),
    );
    if (!changed) throw new NotFoundError(`Webhook ${code} not found`);
    this.logger.log({ event: 'webhook_updated', tenantId: user.tenantId, webhook: code }, 'webhook_updated');
    const view = toView(await this.find(user.tenantId, code));
    return secret ? { ...view, secret } : view;
  }

  async remove(user: AuthUser, code: string): Promise<{ success: true; deletedAt: string }> {
    assertWebhookAdmin(user);
    const existing = await this.find(user.tenantId, code);
    const now = Date.now();
    await this.writes.transaction(this.database.dataSource, (tx) =>
      this.webhooks.update(
        user.tenantId,
        existing.id,
        { whk_is_deleted: 1, whk_status: 0, whk_last_modified: toDbTimestamp(now) },
        tx.config,
      ),
    );
    this.logger.log({ event: 'webhook_deleted', tenantId: user.tenantId, webhook: code }, 'webhook_deleted');
    return { success: true, deletedAt: new Date(now).toISOString() };
  }

  /** url, events, profileCode, description of a body, checked; required ones only on create. */
  private async checkValues(
    tenantId: string,
    b: Record<string, unknown>,
    problems: FieldError[],
    create: boolean,
  ): Promise<Record<string, unknown>> {
    const out: Record<string, unknown> = {};
    if (create || b.url !== undefined) {
      const problem =
        typeof b.url !== 'string' || b.url.length > 2000
          ? 'must be an http or https URL of at most 2,000 characters'
          : urlProblem(this.config.webhooks, b.url);
      if (problem) problems.push({ field: 'url', error: problem });
      else out.whk_url = b.url;
    }
    if (create || b.events !== undefined) {
      const { patterns, entities } = parsePatterns(b.events, problems);
      for (const e of entities)
        if (!(await this.registry.resolve(tenantId, e)))
          problems.push({ field: 'events', error: `${e} is not an entity` });
      out.whk_events = JSON.stringify(patterns);
    }
    if (b.profileCode !== undefined && b.profileCode !== null) {
      if (typeof b.profileCode !== 'string' || !WEBHOOK_CODE.test(b.profileCode))
        problems.push({ field: 'profileCode', error: 'must be a profile code' });
      else if (!(await this.profiles.findByCode(tenantId, b.profileCode)))
        problems.push({ field: 'profileCode', error: `${b.profileCode} is not a profile of this tenant` });
      else out.whk_profile_code = b.profileCode;
    } else if (b.profileCode === null) out.whk_profile_code = null;
    if (b.description !== undefined) {
      if (b.description !== null && (typeof b.description !== 'string' || b.description.length > 500))
        problems.push({ field: 'description', error: 'must be a string of at most 500 characters' });
      else out.whk_description = b.description;
    }
    return out;
  }
}
