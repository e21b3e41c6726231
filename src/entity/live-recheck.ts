import type { Logger } from '@nestjs/common';
import type { JwtAuthGuard } from '../auth/jwt-auth.guard';
import { AppError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import { assertCanPerform } from '../profile/access/can-perform';
import type { LoadedProfile, ProfileLoaderService } from '../profile/profile-loader.service';
import type { RecordContext } from '../records/record-context';
import { roleChanged, shapingVersion, type LiveStream, type LiveView } from './live-stream';

/** The guard's answers that end a stream; any other failure (an outage) leaves it open. */
const ENDING_CODES = new Set<string>(['TOKEN_REVOKED', 'TOKEN_INVALID', 'TOKEN_EXPIRED']);

function groupBy<K>(streams: Iterable<LiveStream>, keyOf: (s: LiveStream) => K): LiveStream[][] {
  const groups = new Map<K, LiveStream[]>();
  for (const s of streams) {
    const key = keyOf(s);
    const list = groups.get(key);
    if (list) list.push(s);
    else groups.set(key, [s]);
  }
  return [...groups.values()];
}

/**
 * D55's recheck of open streams, as the guard would check a request now: first the token (revoked,
 * expired, the user deactivated, the role or its permissions changed: the stream ends), then the
 * profile and registry entry (issue 34 #3): resolved again once per tenant and entity, and where
 * they changed the stream reads with them from its next event on — or ends when they no longer
 * grant it `read`. A lookup that fails (an outage) ends nothing; the next check decides.
 */
export class LiveRecheck {
  constructor(
    private readonly auth: JwtAuthGuard,
    private readonly profiles: ProfileLoaderService,
    private readonly logger: Logger,
  ) {}

  async run(streams: readonly LiveStream[]): Promise<void> {
    const kept: LiveStream[] = [];
    await Promise.all(
      groupBy(streams, (s) => `${s.ctx.tenantId}:${s.ctx.user.jti}:${s.issuedAtMs}`).map(async (group) => {
        if (await this.tokenStillGood(group)) kept.push(...group);
      }),
    );
    await Promise.all(
      groupBy(kept, (s) => `${s.ctx.tenantId}:${s.ctx.entity.code}`).map((group) => this.reprofile(group)),
    );
  }

  /** Ends the group's streams when their token would be refused now; false then. */
  private async tokenStillGood(streams: readonly LiveStream[]): Promise<boolean> {
    const { ctx, issuedAtMs } = streams[0];
    let now: AuthUser;
    try {
      now = await this.auth.recheck(ctx.user, issuedAtMs);
    } catch (err) {
      if (err instanceof AppError && ENDING_CODES.has(err.code)) {
        for (const s of streams) s.close();
        return false;
      }
      this.logger.warn({ err, tenant: ctx.tenantId }, 'Live changes: a token could not be checked again');
      return false;
    }
    if (!roleChanged(ctx.user, now)) return true;
    for (const s of streams) s.close();
    return false;
  }

  /** The profile of one tenant's entity, read again (the cache, the database on a miss). */
  private async reprofile(streams: readonly LiveStream[]): Promise<void> {
    const { tenantId, entity } = streams[0].ctx;
    let loaded: LoadedProfile;
    try {
      loaded = await this.profiles.load({ entityCode: entity.code, tenantId });
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') for (const s of streams) s.close();
      else this.logger.warn({ err, tenant: tenantId }, 'Live changes: a profile could not be read again');
      return;
    }
    for (const s of streams) this.rebase(s, loaded);
  }

  private rebase(stream: LiveStream, loaded: LoadedProfile): void {
    const ctx: RecordContext = {
      ...stream.ctx,
      entity: loaded.entity,
      policy: loaded.policy,
      profileId: loaded.profile.prf_id,
    };
    if (shapingVersion(ctx) === shapingVersion(stream.ctx)) return;
    let view: LiveView | undefined;
    try {
      if (!ctx.entity.supported) throw new AppError('NOT_IMPLEMENTED', 'Unsupported database type');
      assertCanPerform('read', ctx);
      view = stream.viewOf?.(ctx);
    } catch (err) {
      // The client reconnects and is answered as the request would be now (403, 404, 501, or a
      // dataview whose columns the profile no longer shows).
      this.logger.log(
        {
          tenant: ctx.tenantId,
          entity: ctx.entity.code,
          userId: ctx.user.userId,
          code: err instanceof AppError ? err.code : undefined,
        },
        'Live changes: a stream ended, its changed profile no longer grants it',
      );
      stream.close();
      return;
    }
    stream.ctx = ctx;
    if (view) stream.view = view;
  }
}
