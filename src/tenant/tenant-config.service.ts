import { Injectable } from '@nestjs/common';
import type { TenantRow } from './tenants.repository';

/** Spec §2.12 + D11: the login screen's configuration, from tnt_add_dtls. */
export interface TenantConfigView {
  tenant_id: string;
  tenant_code: string;
  tenant_name: string;
  logo_url: string | null;
  colors: Record<string, string>;
  settings: Record<string, unknown>;
  app: Record<string, unknown>;
  ui: Record<string, unknown>;
  features: Record<string, boolean>;
}

function objectOr(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

@Injectable()
export class TenantConfigService {
  view(tenant: TenantRow): TenantConfigView {
    const d = tenant.addDtls;
    const colors = Object.fromEntries(
      Object.entries(objectOr(d.colors)).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    return {
      tenant_id: tenant.id,
      tenant_code: tenant.code,
      tenant_name: tenant.name,
      logo_url: typeof d.logo_url === 'string' ? d.logo_url : null,
      colors,
      settings: objectOr(d.settings),
      app: objectOr(d.app),
      ui: objectOr(d.ui),
      features: tenant.features,
    };
  }
}
