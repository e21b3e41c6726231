import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuthorizationError } from '../../common/errors/app-error';
import { Authenticated, CurrentActor } from '../../common/decorators/context.decorators';
import { ApiEnvelope, ApiErrors } from '../../common/http/api-docs';
import type { Actor } from '../../common/request-context';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { storedSecretKeyRing } from '../../config/key-ring';
import { DatabaseService } from '../../database/database.service';
import { countKeyIds, STORED_SECRET_COLUMNS } from '../../database/secrets/stored-secrets';
import { isSystemAdmin } from '../../profile/access/permissions';
import { KeyStatusDto, StoredSecretStatusDto } from './key-status.api-docs';

/**
 * The status of stored-secret key rotation (D57, issue 34 #14): per kind of stored secret, how many
 * values each accepted key encrypts, how many are legacy or unreadable, and what `npm run
 * keys:rotate` has left to do — the counts the CLI prints, without running it. `admin:system`
 * only: the counts are of every tenant's rows (an operator's view, like the rotation itself), and
 * no value, plain or encrypted, is ever answered.
 */
@ApiTags('admin')
@Authenticated()
@Controller('api/v1/admin/keys')
export class KeyStatusController {
  constructor(
    private readonly database: DatabaseService,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'getKeyStatus',
    summary: 'Stored secrets per encryption key id: the state of a key rotation (counts only)',
    description:
      'Needs admin:system. For each kind of stored secret (external connection strings, webhook signing secrets): values per accepted key id (current first), legacy enc:v1 values, unreadable values, and how many npm run keys:rotate would re-encrypt.',
  })
  @ApiEnvelope(KeyStatusDto)
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH')
  async status(@CurrentActor() actor: Actor): Promise<KeyStatusDto> {
    if (!isSystemAdmin(actor.user.permissions))
      throw new AuthorizationError('Permission admin:system required');
    const keys = storedSecretKeyRing(this.config.crypto);
    const storedSecrets: StoredSecretStatusDto[] = [];
    for (const target of STORED_SECRET_COLUMNS) {
      const counts = await countKeyIds(this.database.dataSource, target, keys);
      const perKey = keys.all.map((k, i) => ({
        kid: k.id,
        current: i === 0,
        count: counts.byKey[k.id] ?? 0,
      }));
      storedSecrets.push({
        kind: target.kind,
        column: `${target.table}.${target.column}`,
        total: counts.total,
        empty: counts.empty,
        keys: perKey,
        legacy: counts.legacy,
        unreadable: counts.unreadable,
        toRotate: perKey.filter((k) => !k.current).reduce((n, k) => n + k.count, 0) + counts.legacy,
      });
    }
    return {
      currentKid: keys.current.id,
      previousKids: keys.all.slice(1).map((k) => k.id),
      storedSecrets,
    };
  }
}
