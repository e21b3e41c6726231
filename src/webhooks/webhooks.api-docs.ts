/** OpenAPI shapes of the webhook routes (D54). Every key is always sent; absent values are null. */

const EVENTS_SCHEMA = {
  type: 'array',
  minItems: 1,
  maxItems: 50,
  items: { type: 'string', example: 'customers.*' },
  description: 'Event patterns: *, <entity>.*, *.<created|updated|deleted|restored> or <entity>.<action>',
};

export const WEBHOOK_SCHEMA = {
  type: 'object',
  required: [
    'code',
    'url',
    'events',
    'profileCode',
    'description',
    'active',
    'disabledReason',
    'failingSince',
    'lastModified',
  ],
  properties: {
    code: { type: 'string', example: 'crm_sync' },
    url: { type: 'string', format: 'uri', example: 'https://hooks.example.com/mtb' },
    events: EVENTS_SCHEMA,
    profileCode: {
      type: 'string',
      nullable: true,
      description:
        "The profile that shapes the record of its entity's events (projection, masking); null = each entity's own",
    },
    description: { type: 'string', nullable: true },
    active: {
      type: 'boolean',
      description: 'false once disabled (by a PUT, after 24 h of failures, or a 410 answer)',
    },
    disabledReason: { type: 'string', nullable: true, description: 'Why the service disabled it' },
    failingSince: {
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'First failure since the last success',
    },
    lastModified: { type: 'string', format: 'date-time', nullable: true },
  },
};

export const WEBHOOK_WITH_SECRET_SCHEMA = {
  ...WEBHOOK_SCHEMA,
  required: [...WEBHOOK_SCHEMA.required, 'secret'],
  properties: {
    ...WEBHOOK_SCHEMA.properties,
    secret: {
      type: 'string',
      pattern: '^whsec_[A-Za-z0-9+/=]{40,}$',
      description:
        'The signing secret (Standard Webhooks form). Shown this once; it is kept encrypted and never shown again.',
    },
  },
};

export const WEBHOOK_MAYBE_SECRET_SCHEMA = {
  ...WEBHOOK_SCHEMA,
  properties: {
    ...WEBHOOK_SCHEMA.properties,
    secret: {
      type: 'string',
      pattern: '^whsec_[A-Za-z0-9+/=]{40,}$',
      description: 'Only with rotateSecret: the new signing secret, shown this once',
    },
  },
};

export const CREATE_WEBHOOK_BODY = {
  type: 'object',
  required: ['code', 'url', 'events'],
  additionalProperties: false,
  properties: {
    code: { type: 'string', pattern: '^[A-Za-z0-9_.-]{1,100}$', example: 'crm_sync' },
    url: {
      type: 'string',
      maxLength: 2000,
      example: 'https://hooks.example.com/mtb',
      description:
        'http or https; outside development loopback, link-local and private addresses are refused unless in WEBHOOK_ALLOWED_HOSTS',
    },
    events: { ...EVENTS_SCHEMA, example: ['customers.*', '*.deleted'] },
    profileCode: { type: 'string', nullable: true, example: 'customers_default' },
    description: { type: 'string', maxLength: 500, nullable: true },
  },
};

export const UPDATE_WEBHOOK_BODY = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    url: CREATE_WEBHOOK_BODY.properties.url,
    events: CREATE_WEBHOOK_BODY.properties.events,
    profileCode: CREATE_WEBHOOK_BODY.properties.profileCode,
    description: CREATE_WEBHOOK_BODY.properties.description,
    active: {
      type: 'boolean',
      description: 'true enables a disabled webhook (and clears its failure clock)',
    },
    rotateSecret: { type: 'boolean', description: 'true: a new secret, shown once in this answer' },
  },
};

export const DELIVERY_SCHEMA = {
  type: 'object',
  required: [
    'id',
    'webhookId',
    'eventId',
    'type',
    'entity',
    'recordId',
    'sequence',
    'status',
    'attempts',
    'nextAttemptAt',
    'lastAttemptAt',
    'lastStatus',
    'lastError',
    'lastResponse',
    'occurredAt',
    'createdAt',
    'deliveredAt',
  ],
  properties: {
    id: { type: 'integer', example: 12 },
    webhookId: {
      type: 'string',
      example: 'msg_2c1f0d8e9a7b4c3d8e1f0a9b8c7d6e5f',
      description: 'The webhook-id header of every attempt',
    },
    eventId: { type: 'string', example: 'evt_0d8e9a7b4c3d8e1f0a9b8c7d6e5f2c1f' },
    type: { type: 'string', example: 'customers.updated' },
    entity: { type: 'string', example: 'customers' },
    recordId: { type: 'integer', example: 7 },
    sequence: { type: 'integer', example: 1042 },
    status: { type: 'string', enum: ['PENDING', 'DELIVERING', 'DELIVERED', 'DEAD'] },
    attempts: { type: 'integer', example: 1 },
    nextAttemptAt: { type: 'string', format: 'date-time', nullable: true },
    lastAttemptAt: { type: 'string', format: 'date-time', nullable: true },
    lastStatus: {
      type: 'integer',
      nullable: true,
      description: "The receiver's HTTP status (null: no answer)",
    },
    lastError: { type: 'string', nullable: true },
    lastResponse: {
      type: 'string',
      nullable: true,
      description: 'The start of the last answer (at most 1 KiB)',
    },
    occurredAt: { type: 'string', format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
    deliveredAt: { type: 'string', format: 'date-time', nullable: true },
  },
};

export const DELETED_SCHEMA = {
  type: 'object',
  required: ['success', 'deletedAt'],
  properties: {
    success: { type: 'boolean', enum: [true] },
    deletedAt: { type: 'string', format: 'date-time' },
  },
};
