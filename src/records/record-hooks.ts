import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { ServiceError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';

/** Who a job acts as: the user as the database has it now, or undefined when gone or inactive. */
export type ActingUserLookup = (
  tenantId: string,
  userId: number,
  requestId: string,
) => Promise<AuthUser | undefined>;

/**
 * Revokes every token of a user issued before `atMs`, inside the write's transaction on the
 * configuration database (D46): a users write that changes a role or a password ends the sessions.
 */
export type SessionRevoker = (
  tenantId: string,
  userId: number,
  atMs: number,
  tx: QueryRunner,
) => Promise<void>;

/**
 * What the floors above the records core plug into it at start-up (ARCHITECTURE: a lower floor never
 * imports a higher one; the higher module registers a hook). Auth registers both: the records core
 * knows users and sessions only through them.
 */
@Injectable()
export class RecordHooks {
  private users?: ActingUserLookup;
  private revoker?: SessionRevoker;

  registerActingUsers(lookup: ActingUserLookup): void {
    this.users = lookup;
  }

  registerSessionRevoker(revoker: SessionRevoker): void {
    this.revoker = revoker;
  }

  get actingUser(): ActingUserLookup {
    if (!this.users) throw new ServiceError('No user directory is registered with the records core');
    return this.users;
  }

  get revokeSessions(): SessionRevoker {
    if (!this.revoker) throw new ServiceError('No session revoker is registered with the records core');
    return this.revoker;
  }
}
