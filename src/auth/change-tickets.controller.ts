import { Controller, Post, Req } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Authenticated, CurrentUser } from '../common/decorators/context.decorators';
import { ApiEnvelope, ApiErrors } from '../common/http/api-docs';
import type { AuthUser } from '../common/request-context';
import { ChangeTicketsService, TICKET_TTL_S } from './change-tickets.service';

export class ChangeTicketDto {
  @ApiProperty({ description: 'Single use; pass as `?ticket=` to a changes stream', example: 'hZ2u…' })
  ticket!: string;

  @ApiProperty({ description: 'Seconds the ticket stays valid', example: TICKET_TTL_S })
  expiresIn!: number;
}

/** D55: tickets for browsers' EventSource, which cannot send the tenant header or the token. */
@ApiTags('entities')
@Controller('api/v1/changes')
export class ChangeTicketsController {
  constructor(private readonly tickets: ChangeTicketsService) {}

  @Post('tickets')
  @Authenticated()
  @ApiOperation({
    operationId: 'createChangeTicket',
    summary: 'A single-use ticket (60 s) to open a changes stream with `?ticket=` (D55)',
    description:
      'Bound to the caller’s tenant and user; the stream opened with it is checked like the token ' +
      'it was issued with (revocation, expiry, the user’s current role). Any signed-in user may take one.',
  })
  @ApiEnvelope(ChangeTicketDto, { status: 201 })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN')
  create(@CurrentUser() user: AuthUser, @Req() request: FastifyRequest): Promise<ChangeTicketDto> {
    return this.tickets.issue(user, request.tokenIssuedAtMs ?? Date.now());
  }
}
