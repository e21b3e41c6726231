import { conventionColumns, id, int, json, str, TableDef, text, ts } from './columns';

/**
 * D54: the transactional outbox. One row per committed write of a record through the records core,
 * inserted in the write's own transaction (on the configuration database, beside its audit row).
 * `evt_sequence` is per tenant and only grows in commit order: it is taken from the tenant's row of
 * app_event_sequences, whose lock the write holds until it commits, so a reader that pages by
 * (tenant, sequence) never sees a later number before an earlier one (the live changes of D55 resume
 * from it). `evt_record` is the record as written (hidden fields never included), shaped later by
 * each reader's profile. Purged after EVENTS_RETENTION_S. No foreign keys (operational rows).
 */
export const EVENTS_TABLE: TableDef = {
  name: 'app_events',
  prefix: 'evt',
  columns: [
    id('evt'),
    str('evt_uid', 64, false),
    int('evt_tenant_id', false),
    int('evt_sequence', false),
    str('evt_type', 150, false),
    str('evt_entity_code', 100, false),
    int('evt_record_id', false),
    ts('evt_occurred_at', false),
    int('evt_actor_id'),
    str('evt_actor_email', 255),
    str('evt_request_id', 100),
    json('evt_changes'),
    text('evt_record'),
  ],
  indices: [
    // Readers page by (tenant, sequence); the uniqueness is the last guard of the sequence.
    { columns: ['evt_tenant_id', 'evt_sequence'], unique: true },
    { columns: ['evt_uid'], unique: true },
    // The retention purge.
    { columns: ['evt_occurred_at'] },
  ],
};

/**
 * The per-tenant counter of D54's sequence: a write takes the next numbers with an UPDATE of its
 * tenant's row as the last statement of its transaction and holds that row's lock until it commits.
 */
export const EVENT_SEQUENCES_TABLE: TableDef = {
  name: 'app_event_sequences',
  prefix: 'evs',
  columns: [id('evs'), int('evs_tenant_id', false), int('evs_last_sequence', false, 0)],
  indices: [{ columns: ['evs_tenant_id'], unique: true }],
};

/**
 * D54: webhooks are tenant configuration (the common columns of spec §2.1). `whk_secret` is the
 * AES-256-GCM ciphertext of the signing secret (D3's key), never read back by a route. The relay's
 * state sits beside it: `whk_cursor` (the last sequence fanned out to deliveries), the relay lease,
 * and `whk_failing_since` (the first failure since the last success; 24 h of it disables the hook).
 */
export const WEBHOOKS_TABLE: TableDef = {
  name: 'app_webhooks',
  prefix: 'whk',
  columns: [
    id('whk'),
    str('whk_code', 100, false),
    str('whk_url', 2000, false),
    json('whk_events'),
    text('whk_secret'),
    str('whk_profile_code', 100),
    str('whk_description', 500),
    int('whk_cursor', false, 0),
    str('whk_relay_owner', 100),
    ts('whk_relay_until'),
    ts('whk_failing_since'),
    str('whk_disabled_reason', 500),
    ...conventionColumns('whk', 'required'),
  ],
  indices: [{ columns: ['whk_tenant_id', 'whk_code'] }],
};

/**
 * One delivery of one event to one webhook (D54). `whd_uid` is the `webhook-id` every attempt
 * carries; `whd_payload` the body as first rendered, so a retry sends the same bytes. Claimed with
 * the skip-locked read and a lease (D49): PENDING rows due, and DELIVERING ones whose lease ran out.
 * Delivered rows go with the events' retention; DEAD rows are kept for the log and a replay.
 */
export const WEBHOOK_DELIVERIES_TABLE: TableDef = {
  name: 'app_webhook_deliveries',
  prefix: 'whd',
  columns: [
    id('whd'),
    str('whd_uid', 64, false),
    int('whd_tenant_id', false),
    int('whd_webhook_id', false),
    str('whd_event_uid', 64, false),
    int('whd_sequence', false),
    str('whd_type', 150, false),
    str('whd_entity_code', 100, false),
    int('whd_record_id', false),
    text('whd_payload'),
    str('whd_status', 20, false),
    int('whd_attempts', false, 0),
    ts('whd_next_attempt_at'),
    str('whd_lease_owner', 100),
    ts('whd_lease_until'),
    int('whd_last_status'),
    str('whd_last_error', 500),
    text('whd_last_response'),
    ts('whd_occurred_at', false),
    ts('whd_created_at', false),
    ts('whd_last_attempt_at'),
    ts('whd_delivered_at'),
  ],
  indices: [
    { columns: ['whd_uid'], unique: true },
    { columns: ['whd_webhook_id', 'whd_event_uid'], unique: true },
    // Claims: due PENDING rows and DELIVERING rows whose lease ran out.
    { columns: ['whd_status', 'whd_next_attempt_at'] },
    // Ordering per (webhook, record) and the delivery log.
    { columns: ['whd_webhook_id', 'whd_record_id', 'whd_sequence'] },
    { columns: ['whd_tenant_id', 'whd_webhook_id', 'whd_id'] },
    { columns: ['whd_created_at'] },
  ],
};

/** The tables of migration Outbox1795737600000, which creates exactly these. */
export const OUTBOX_TABLES: readonly TableDef[] = [
  EVENTS_TABLE,
  EVENT_SEQUENCES_TABLE,
  WEBHOOKS_TABLE,
  WEBHOOK_DELIVERIES_TABLE,
];
