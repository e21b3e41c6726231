import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { AppConfig } from '../config/config.schema';
import { decodeKey32 } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import {
  decryptTenantHeader,
  isHeaderExpired,
  TenantHeaderError,
  TenantPayload,
} from './tenant-header.crypto';

/**
 * Decrypts x-tenant-id values. A proxy sends the same few header values again and again, so
 * results are kept in a bounded LRU keyed by the exact header text: a repeat costs one map lookup.
 * Only successes are cached; the max-age check (D6) runs on every request.
 */
@Injectable()
export class TenantHeaderService {
  private readonly key: Buffer | undefined;
  private readonly maxAgeS: number;
  private readonly cache = new LRUCache<string, TenantPayload>({ max: 10_000 });

  constructor(@InjectConfig() config: AppConfig) {
    this.key = decodeKey32(config.crypto.tenantEncryptionKey);
    this.maxAgeS = config.auth.tenantHeaderMaxAgeS;
  }

  /** The tenant id of a header value, or TenantHeaderError (spec §5.1, D5-D6). */
  resolve(raw: string | string[] | undefined): string {
    if (Array.isArray(raw)) throw new TenantHeaderError('invalid_format_not_encrypted');
    let payload = raw === undefined ? undefined : this.cache.get(raw);
    if (!payload) {
      // A missing or malformed server key answers decryption_failed (spec §7).
      payload = decryptTenantHeader(raw, this.key ?? '');
      this.cache.set(raw as string, payload);
    }
    if (isHeaderExpired(payload, this.maxAgeS)) throw new TenantHeaderError('decryption_failed');
    return payload.id;
  }
}
