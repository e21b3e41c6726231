import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { AppConfig } from '../config/config.schema';
import { tenantKeyRing, type KeyRing } from '../config/key-ring';
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
  /** TENANT_ENCRYPTION_KEY and its previous keys (D57); undefined when not configured. */
  private readonly keys: KeyRing | undefined;
  private readonly maxAgeS: number;
  private readonly cache = new LRUCache<string, TenantPayload>({ max: 10_000 });

  constructor(@InjectConfig() config: AppConfig) {
    try {
      this.keys = tenantKeyRing(config.crypto);
    } catch {
      this.keys = undefined;
    }
    this.maxAgeS = config.auth.tenantHeaderMaxAgeS;
  }

  /** The tenant id of a header value, or TenantHeaderError (spec §5.1, D5-D6). */
  resolve(raw: string | string[] | undefined): string {
    if (Array.isArray(raw)) throw new TenantHeaderError('invalid_format_not_encrypted');
    let payload = raw === undefined ? undefined : this.cache.get(raw);
    if (!payload) {
      // A missing or malformed server key answers decryption_failed (spec §7).
      payload = decryptTenantHeader(raw, this.keys ?? '');
      this.cache.set(raw as string, payload);
    }
    if (isHeaderExpired(payload, this.maxAgeS)) throw new TenantHeaderError('decryption_failed');
    return payload.id;
  }
}
