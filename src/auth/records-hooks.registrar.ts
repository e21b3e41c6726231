import { Injectable, OnModuleInit } from '@nestjs/common';
import { RecordHooks } from '../records/record-hooks';
import { RevocationService } from './revocation.service';
import { UsersRepository } from './users.repository';

/**
 * Plugs auth into the records core at start-up (ARCHITECTURE: records never imports auth): the
 * user a job acts as, read from the database as it is now (active, current role and permissions —
 * not what a token said when the job was queued), and the session revocation of a users write.
 */
@Injectable()
export class RecordsHooksRegistrar implements OnModuleInit {
  constructor(
    private readonly hooks: RecordHooks,
    private readonly users: UsersRepository,
    private readonly revocations: RevocationService,
  ) {}

  onModuleInit(): void {
    this.hooks.registerActingUsers(async (tenantId, userId, requestId) => {
      const record = await this.users.findById(tenantId, userId);
      if (!record || !record.active) return undefined;
      return {
        userId: record.id,
        email: record.email,
        tenantId: record.tenantId,
        roleId: record.roleId,
        roles: record.roleCode ? [record.roleCode] : [],
        permissions: record.permissions,
        // No token: a job acts with the user's current state.
        jti: `job:${requestId}`,
        exp: 0,
      };
    });
    this.hooks.registerSessionRevoker((tenantId, userId, atMs, tx) =>
      this.revocations.revokeUserTokens(tenantId, userId, atMs, tx),
    );
  }
}
