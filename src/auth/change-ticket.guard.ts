import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { routePolicy } from '../common/http/route-policy';
import { ChangeTicketsService } from './change-tickets.service';

/**
 * Runs before TenantGuard (D55): on a route marked @AcceptsTicket() whose query carries `ticket`,
 * the ticket is redeemed (spent) and stands for both the tenant header and the bearer token —
 * TenantGuard takes the tenant from it, JwtAuthGuard the token's claims, with every check of a
 * token (revocation, expiry, the user's current state and role). An invalid, used or expired
 * ticket is 401 TOKEN_INVALID. Every other request passes untouched.
 */
@Injectable()
export class ChangeTicketGuard implements CanActivate {
  constructor(private readonly tickets: ChangeTicketsService) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (!routePolicy(context).acceptsTicket) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const query = request.query as Record<string, unknown> | undefined;
    const ticket = query?.ticket;
    if (ticket === undefined) return true;
    return this.tickets.redeem(typeof ticket === 'string' ? ticket : '').then((claims) => {
      request.changeTicket = claims;
      return true;
    });
  }
}
