import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import type { TicketClaims } from '../common/decorators/context.decorators';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';

/** Seconds a change-stream ticket is good for (D55). */
export const TICKET_TTL_S = CACHE_TTL.changeTicket;

/** What the ticket route answers (D55). */
export interface IssuedTicket {
  ticket: string;
  expiresIn: number;
}

interface StoredTicket {
  claims: TicketClaims;
  /** Epoch ms after which the ticket is refused, whatever the store's TTL still says. */
  expiresAtMs: number;
}

const TICKET = /^[A-Za-z0-9_-]{43}$/;

function invalid(): AppError {
  return new AppError('TOKEN_INVALID', 'Ticket is invalid, used or expired');
}

/**
 * Change-stream tickets (D55): a browser's EventSource sends no headers, so an authenticated
 * client first takes a ticket and opens the stream with `?ticket=`. A ticket is 32 random bytes
 * (base64url), kept in the shared cache (Redis when configured: a ticket issued on one instance is
 * redeemed on another) under the SHA-256 of its text for TICKET_TTL_S seconds, with the claims of
 * the token it was issued against (tenant, user, jti, exp, issue time): JwtAuthGuard checks that
 * token's revocation, expiry and user state as if it had been sent. Redeeming reads the entry and
 * deletes it; only the caller whose delete removed it wins, so a ticket is used once even when two
 * instances redeem it at the same moment. A cache failure reads as an unknown ticket (fail closed).
 */
@Injectable()
export class ChangeTicketsService {
  constructor(private readonly cache: CacheService) {}

  async issue(user: AuthUser, issuedAtMs: number, nowMs = Date.now()): Promise<IssuedTicket> {
    const ticket = randomBytes(32).toString('base64url');
    const stored: StoredTicket = {
      claims: { ...user, issuedAtMs },
      expiresAtMs: nowMs + TICKET_TTL_S * 1000,
    };
    const ok = await this.cache.setJson(this.keyOf(ticket), stored, TICKET_TTL_S);
    if (!ok) throw new AppError('SERVICE_ERROR', 'The ticket could not be stored; try again');
    return { ticket, expiresIn: TICKET_TTL_S };
  }

  /** The claims of a valid ticket, which is then spent; else 401 TOKEN_INVALID. */
  async redeem(ticket: string, nowMs = Date.now()): Promise<TicketClaims> {
    if (!TICKET.test(ticket)) throw invalid();
    const key = this.keyOf(ticket);
    const stored = await this.cache.getJson<StoredTicket>(key);
    if (!stored || typeof stored !== 'object') throw invalid();
    // Single use: of every redeemer that read it, only the one whose delete removed it wins.
    if ((await this.cache.delete([key])) !== 1) throw invalid();
    if (!(stored.expiresAtMs > nowMs) || !stored.claims || typeof stored.claims.tenantId !== 'string')
      throw invalid();
    return stored.claims;
  }

  private keyOf(ticket: string): string {
    return this.cache.keys.changeTicket(createHash('sha256').update(ticket).digest('hex'));
  }
}
