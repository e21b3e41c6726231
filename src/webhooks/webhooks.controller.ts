import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import { Authenticated, CurrentUser } from '../common/decorators/context.decorators';
import { ApiErrors, envelopeSchema } from '../common/http/api-docs';
import type { AuthUser } from '../common/request-context';
import { DeliveriesService } from './deliveries.service';
import type { DeliveryView, WebhookView } from './webhook.types';
import {
  CREATE_WEBHOOK_BODY,
  DELETED_SCHEMA,
  DELIVERY_SCHEMA,
  UPDATE_WEBHOOK_BODY,
  WEBHOOK_MAYBE_SECRET_SCHEMA,
  WEBHOOK_SCHEMA,
  WEBHOOK_WITH_SECRET_SCHEMA,
} from './webhooks.api-docs';
import { WebhooksService } from './webhooks.service';

const CODE_PARAM = { name: 'code', example: 'crm_sync', description: 'The webhook code' };

/**
 * Webhook routes (D54): the tenant's webhooks, their delivery log and the retry of a delivery.
 * Protected (token of the header's tenant) and for `admin:webhooks` or `admin:system`, which the
 * service checks (one route decorator names one permission). Only this controller sees HTTP.
 */
@ApiTags('webhooks')
@Authenticated()
@Controller('api/v1/webhooks')
export class WebhooksController {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly deliveries: DeliveriesService,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listWebhooks',
    summary: "The tenant's webhooks",
    description: 'Needs admin:webhooks or admin:system.',
  })
  @ApiOkResponse({ schema: envelopeSchema({ type: 'array', items: WEBHOOK_SCHEMA }) })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN')
  list(@CurrentUser() user: AuthUser): Promise<WebhookView[]> {
    return this.webhooks.list(user);
  }

  @Post()
  @ApiOperation({
    operationId: 'createWebhook',
    summary: 'Register a webhook; its signing secret is in this answer only',
    description:
      'Needs admin:webhooks or admin:system. The webhook hears of the events committed from now on. ' +
      'The secret (`whsec_…`) is kept encrypted and never shown again (rotate it with PUT `rotateSecret`).',
  })
  @ApiBody({ schema: CREATE_WEBHOOK_BODY })
  @ApiResponse({ status: 201, description: 'Created', schema: envelopeSchema(WEBHOOK_WITH_SECRET_SCHEMA) })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'CONFLICT')
  create(@CurrentUser() user: AuthUser, @Body() body: unknown): Promise<WebhookView & { secret: string }> {
    return this.webhooks.create(user, body);
  }

  @Get(':code')
  @ApiOperation({
    operationId: 'getWebhook',
    summary: 'One webhook (never its secret)',
    description: 'Needs admin:webhooks or admin:system.',
  })
  @ApiParam(CODE_PARAM)
  @ApiOkResponse({ schema: envelopeSchema(WEBHOOK_SCHEMA) })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  get(@CurrentUser() user: AuthUser, @Param('code') code: string): Promise<WebhookView> {
    return this.webhooks.get(user, code);
  }

  @Put(':code')
  @ApiOperation({
    operationId: 'updateWebhook',
    summary: 'Change a webhook: URL, events, profile, description; enable or disable it; rotate its secret',
    description: 'Needs admin:webhooks or admin:system. Only the fields sent change.',
  })
  @ApiParam(CODE_PARAM)
  @ApiBody({ schema: UPDATE_WEBHOOK_BODY })
  @ApiOkResponse({ schema: envelopeSchema(WEBHOOK_MAYBE_SECRET_SCHEMA) })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  update(
    @CurrentUser() user: AuthUser,
    @Param('code') code: string,
    @Body() body: unknown,
  ): Promise<WebhookView & { secret?: string }> {
    return this.webhooks.update(user, code, body);
  }

  @Delete(':code')
  @ApiOperation({
    operationId: 'deleteWebhook',
    summary: 'Remove a webhook (soft delete); its pending deliveries are not sent',
    description: 'Needs admin:webhooks or admin:system.',
  })
  @ApiParam(CODE_PARAM)
  @ApiOkResponse({ schema: envelopeSchema(DELETED_SCHEMA) })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  remove(
    @CurrentUser() user: AuthUser,
    @Param('code') code: string,
  ): Promise<{ success: true; deletedAt: string }> {
    return this.webhooks.remove(user, code);
  }

  @Get(':code/deliveries')
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: "The webhook's deliveries, newest first: status, attempts, last answer, next attempt",
    description:
      'Needs admin:webhooks or admin:system. Delivered ones are kept for EVENTS_RETENTION_S, dead ones until removed with the webhook.',
  })
  @ApiParam(CODE_PARAM)
  @ApiQuery({ name: 'status', required: false, enum: ['PENDING', 'DELIVERING', 'DELIVERED', 'DEAD'] })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  })
  @ApiQuery({
    name: 'before',
    required: false,
    schema: { type: 'integer', minimum: 1 },
    description: 'Only deliveries with a smaller id (the next page)',
  })
  @ApiOkResponse({ schema: envelopeSchema({ type: 'array', items: DELIVERY_SCHEMA }) })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  deliveriesList(
    @CurrentUser() user: AuthUser,
    @Param('code') code: string,
    @Query('status') status?: string,
    @Query('limit') limit?: string,
    @Query('before') before?: string,
  ): Promise<DeliveryView[]> {
    return this.deliveries.list(user, code, { status, limit, before });
  }

  @Post(':code/deliveries/:id/retry')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'retryWebhookDelivery',
    summary: 'Send a delivery again, dead or not, with the same webhook-id',
    description: 'Needs admin:webhooks or admin:system. 409 while the delivery is being sent.',
  })
  @ApiParam(CODE_PARAM)
  @ApiParam({ name: 'id', example: 12, description: 'The delivery id' })
  @ApiOkResponse({ schema: envelopeSchema(DELIVERY_SCHEMA) })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT')
  retry(
    @CurrentUser() user: AuthUser,
    @Param('code') code: string,
    @Param('id') id: string,
  ): Promise<DeliveryView> {
    return this.deliveries.retry(user, code, id);
  }
}
