/**
 * Every table of the configuration database that holds rows of a tenant (D58), in one place: the
 * tenant lifecycle copies the configuration ones from a template, exports them all, and on erase
 * archives the configuration rows and deletes the rest. A new table with a tenant column adds its
 * line here (a test compares this list with the schema). Entity tables are not listed: they are
 * found through the registry, on every connection.
 */
export interface TenantOwnedTable {
  table: string;
  /** Column prefix: `<prefix>_tenant_id`, and for configuration `<prefix>_status` etc. */
  prefix: string;
  /**
   * `config`: the tenant's configuration (§2.1 convention columns), copied from a template and
   * archived on erase (status -1, soft-deleted), kept for the record. `users`: archived too.
   * `data`: deleted on erase.
   */
  kind: 'config' | 'users' | 'data';
  /** Configuration copied from a template tenant (D58), in this order (roles before users). */
  copied?: boolean;
}

export const TENANT_OWNED_TABLES: readonly TenantOwnedTable[] = [
  { table: 'app_roles', prefix: 'rol', kind: 'config', copied: true },
  { table: 'app_object_registries', prefix: 'obj', kind: 'config', copied: true },
  { table: 'app_object_profiles', prefix: 'prf', kind: 'config', copied: true },
  { table: 'app_page_configs', prefix: 'pgc', kind: 'config', copied: true },
  { table: 'app_workflow_configs', prefix: 'wft', kind: 'config', copied: true },
  { table: 'app_dataview_configs', prefix: 'dvc', kind: 'config', copied: true },
  { table: 'app_navigation_configs', prefix: 'nav', kind: 'config', copied: true },
  { table: 'app_value_sets', prefix: 'vs', kind: 'config', copied: true },
  // Copied disabled, with a new secret and no delivery state (D58).
  { table: 'app_webhooks', prefix: 'whk', kind: 'config', copied: true },
  // A tenant's own connections carry its credentials: never copied to another tenant.
  { table: 'app_connections', prefix: 'con', kind: 'config' },
  { table: 'app_users', prefix: 'usr', kind: 'users' },
  // Runtime and operational rows: deleted on erase, children first.
  { table: 'wft_queue', prefix: 'wfq', kind: 'data' },
  { table: 'wft_step_keys', prefix: 'wsk', kind: 'data' },
  { table: 'wft_logs', prefix: 'wfl', kind: 'data' },
  { table: 'wft_node_states', prefix: 'wns', kind: 'data' },
  { table: 'wft_instances', prefix: 'wfi', kind: 'data' },
  { table: 'app_audit_logs', prefix: 'aud', kind: 'data' },
  { table: 'app_webhook_deliveries', prefix: 'whd', kind: 'data' },
  { table: 'app_events', prefix: 'evt', kind: 'data' },
  { table: 'app_event_sequences', prefix: 'evs', kind: 'data' },
  { table: 'app_export_files', prefix: 'exf', kind: 'data' },
  { table: 'app_import_batches', prefix: 'imb', kind: 'data' },
  { table: 'app_jobs', prefix: 'job', kind: 'data' },
  { table: 'app_revoked_tokens', prefix: 'rvk', kind: 'data' },
  { table: 'app_tenant_usage', prefix: 'tnu', kind: 'data' },
];
