import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated, CurrentTenant } from '../common/decorators/context.decorators';
import type { TenantContext } from '../common/request-context';
import { notModified } from '../records/concurrency-token';
import { ApiConfigRoute } from './config-delivery.api-docs';
import { ConfigDeliveryService } from './config-delivery.service';
import type { ConfigKind } from './config-kinds';

/**
 * Configuration delivery for SPA clients (D41, D50). Protected and tenant-scoped (the global guards:
 * tenant header, token of that tenant, rate limit), but no particular permission: every signed-in
 * user of the tenant needs its pages, menu and value sets to render the application at all, and
 * they hold no record data. Only this controller sees the HTTP request.
 */
@ApiTags('config')
@Authenticated()
@Controller('api/v1/config')
export class ConfigDeliveryController {
  constructor(private readonly configs: ConfigDeliveryService) {}

  @Get('pages/:code')
  @ApiConfigRoute('page')
  async page(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @CurrentTenant() tenant: TenantContext,
    @Param('code') code: string,
  ): Promise<void> {
    await this.answer(request, reply, tenant, 'page', code);
  }

  @Get('navigation/:code')
  @ApiConfigRoute('navigation')
  async navigation(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @CurrentTenant() tenant: TenantContext,
    @Param('code') code: string,
  ): Promise<void> {
    await this.answer(request, reply, tenant, 'navigation', code);
  }

  @Get('value-sets/:code')
  @ApiConfigRoute('valueSet')
  async valueSet(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @CurrentTenant() tenant: TenantContext,
    @Param('code') code: string,
  ): Promise<void> {
    await this.answer(request, reply, tenant, 'valueSet', code);
  }

  /** The answer with its ETag, or 304 when If-None-Match names it (D50). */
  private async answer(
    request: FastifyRequest,
    reply: FastifyReply,
    tenant: TenantContext,
    kind: ConfigKind,
    code: string,
  ): Promise<void> {
    const answer = await this.configs.get(tenant.id, kind, code);
    // private: the answer is the tenant's; no-cache: a browser keeps it but asks again with the ETag.
    void reply.header('etag', `"${answer.version}"`).header('cache-control', 'private, no-cache');
    if (notModified(request.headers['if-none-match'], answer.version)) {
      await reply.status(304).send();
      return;
    }
    await reply.send(answer);
  }
}
