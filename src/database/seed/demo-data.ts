/**
 * The demo data set of docs/demo-data.md as plain data plus deterministic generators for the demo entity rows.
 * No I/O here: `demo-seed.ts` turns these objects into rows. Changing anything below changes what a
 * new user sees on first start, and the ids docs/demo-data.md lists depend on the order of the arrays.
 */

/** Password of every demo user when DEMO_PASSWORD is unset, outside production only (docs/demo-data.md). */
export const DEV_DEMO_PASSWORD = 'Demo-Passw0rd!';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

// ---------------------------------------------------------------------------------------------
// Registry field metadata (`obj_payload`), read by the registry module.
// ---------------------------------------------------------------------------------------------

export type RegistryFieldType =
  'text' | 'email' | 'integer' | 'numeric' | 'date' | 'boolean' | 'select' | 'json';

/** One field of an entity: the API name, the real column and its rules. */
export type RegistryField = {
  /** Name on the wire, in filters, projections, dataview fieldCodes. */
  name: string;
  /** Real column name in the entity table. */
  column: string;
  type: RegistryFieldType;
  required?: boolean;
  /** Unique within the tenant (all demo entities are tenantPolicy STRICT). */
  unique?: boolean;
  maxLength?: number;
  min?: number;
  max?: number;
  /** For `select`: the vs_code of the allowed values. */
  valueSet?: string;
  /** Foreign key: this field holds the `field` of a row of `entity` (of the same tenant). */
  references?: { entity: string; field: string };
  /** Set by the service (the identifier), never written by a client. */
  readOnly?: boolean;
  /** Never returned and never written through the generic entity API (e.g. password hashes). */
  hidden?: boolean;
};

/** A dependent entity (D25): rows of `entity` whose `foreignKey` field points at this entity's id. */
export type RegistryRelation = { entity: string; foreignKey: string; onDelete: 'restrict' | 'cascade' };

export type RegistryPayload = { fields: RegistryField[]; relations: RegistryRelation[] };

// ---------------------------------------------------------------------------------------------
// Tenants, roles, users
// ---------------------------------------------------------------------------------------------

export interface DemoTenant {
  code: string;
  name: string;
  description: string;
  status: 1 | 0;
  /** tnt_add_dtls (D11). */
  branding: JsonObject | null;
  /** tnt_features (D10); a missing code means enabled. */
  features: Record<string, boolean> | null;
}

function logo(text: string, background: string, foreground: string): string {
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="48" viewBox="0 0 200 48">` +
    `<rect width="200" height="48" rx="8" fill="${background}"/>` +
    `<text x="100" y="31" font-family="Helvetica,Arial,sans-serif" font-size="20" font-weight="700" ` +
    `fill="${foreground}" text-anchor="middle">${text}</text></svg>`;
  // A data URL: the login screen shows a logo without any asset server or network access.
  return `data:image/svg+xml,${encodeURIComponent(svg)}`;
}

/** In id order: acme = 1, globex = 2, initech = 3. */
export const DEMO_TENANTS: readonly DemoTenant[] = [
  {
    code: 'acme',
    name: 'Acme Corporation',
    description: 'Demo tenant with every feature enabled',
    status: 1,
    branding: {
      logo_url: logo('ACME', '#1F4E79', '#FFFFFF'),
      colors: { primary: '#1F4E79', secondary: '#F2A900', background: '#F7F9FC' },
      settings: { locale: 'en-US', dateFormat: 'MM/dd/yyyy' },
    },
    features: { workflows: true, dataviews: true, export: true, signup: true },
  },
  {
    code: 'globex',
    name: 'Globex Inc',
    description: 'Demo tenant without exports',
    status: 1,
    branding: {
      logo_url: logo('GLOBEX', '#2E7D32', '#FFFFFF'),
      colors: { primary: '#2E7D32', secondary: '#8E24AA', background: '#FFFFFF' },
      settings: { locale: 'en-GB', dateFormat: 'dd/MM/yyyy' },
    },
    features: { export: false },
  },
  {
    code: 'initech',
    name: 'Initech',
    description: 'Inactive demo tenant: its users cannot sign in',
    status: 0,
    branding: null,
    features: null,
  },
];

export interface DemoRole {
  tenantCode: string;
  code: string;
  description: string;
  /** rol_permissions (D9). */
  permissions: string[];
}

const VIEWER_PERMISSIONS = ['read:entity', 'read:dataview', 'export:dataview', 'read:workflow'];

/** In id order: acme ADMIN 1, VIEWER 2, SYSTEM_ADMIN 3; globex ADMIN 4, VIEWER 5; initech ADMIN 6. */
export const DEMO_ROLES: readonly DemoRole[] = [
  { tenantCode: 'acme', code: 'ADMIN', description: 'Tenant administrator', permissions: ['*:*'] },
  { tenantCode: 'acme', code: 'VIEWER', description: 'Read-only user', permissions: VIEWER_PERMISSIONS },
  {
    tenantCode: 'acme',
    code: 'SYSTEM_ADMIN',
    description: 'System administrator (all tenants, system-wide configuration)',
    permissions: ['admin:system', '*:*'],
  },
  { tenantCode: 'globex', code: 'ADMIN', description: 'Tenant administrator', permissions: ['*:*'] },
  { tenantCode: 'globex', code: 'VIEWER', description: 'Read-only user', permissions: VIEWER_PERMISSIONS },
  { tenantCode: 'initech', code: 'ADMIN', description: 'Tenant administrator', permissions: ['*:*'] },
];

export interface DemoUser {
  tenantCode: string;
  email: string;
  firstName: string;
  lastName: string;
  roleCode: string;
}

/** In id order 1…5. */
export const DEMO_USERS: readonly DemoUser[] = [
  { tenantCode: 'acme', email: 'admin@acme.test', firstName: 'Ada', lastName: 'Admin', roleCode: 'ADMIN' },
  {
    tenantCode: 'acme',
    email: 'viewer@acme.test',
    firstName: 'Victor',
    lastName: 'Viewer',
    roleCode: 'VIEWER',
  },
  {
    tenantCode: 'acme',
    email: 'root@acme.test',
    firstName: 'Rosa',
    lastName: 'Root',
    roleCode: 'SYSTEM_ADMIN',
  },
  {
    tenantCode: 'globex',
    email: 'admin@globex.test',
    firstName: 'Gina',
    lastName: 'Admin',
    roleCode: 'ADMIN',
  },
  {
    tenantCode: 'initech',
    email: 'staff@initech.test',
    firstName: 'Sam',
    lastName: 'Staff',
    roleCode: 'ADMIN',
  },
];

/** The demo users as the start-up banner lists them (display text only). */
export const DEMO_BANNER_USERS: Array<{ email: string; tenant: string; role: string }> = DEMO_USERS.map(
  (u) => ({
    email: u.email,
    tenant: u.tenantCode,
    role:
      DEMO_TENANTS.find((t) => t.code === u.tenantCode)?.status === 0
        ? `${u.roleCode} (tenant inactive)`
        : u.roleCode,
  }),
);

// ---------------------------------------------------------------------------------------------
// Object registry and profiles (system-wide rows)
// ---------------------------------------------------------------------------------------------

export interface DemoEntity {
  code: string;
  /** obj_name and obj_description (the display name, spec 2.5). */
  name: string;
  table: string;
  /** obj_payload_column_prefix. */
  prefix: string;
  /** Primary key column: obj_payload_identifier and obj_db_key. */
  identifier: string;
  /** obj_add_dtls.maintainedBy (D21). */
  maintainedBy: 'system' | 'tenant';
  payload: RegistryPayload;
}

export const DEMO_ENTITIES: readonly DemoEntity[] = [
  {
    code: 'customers',
    name: 'Customers',
    table: 'demo_customers',
    prefix: 'cus_',
    identifier: 'cus_id',
    maintainedBy: 'tenant',
    payload: {
      fields: [
        { name: 'id', column: 'cus_id', type: 'integer', readOnly: true },
        { name: 'name', column: 'cus_name', type: 'text', required: true, maxLength: 100 },
        { name: 'email', column: 'cus_email', type: 'email', required: true, unique: true, maxLength: 255 },
        { name: 'phone', column: 'cus_phone', type: 'text', maxLength: 50 },
        { name: 'tier', column: 'cus_tier', type: 'select', valueSet: 'customer_tiers' },
        { name: 'credit_limit', column: 'cus_credit_limit', type: 'numeric', min: 0 },
        { name: 'internal_notes', column: 'cus_internal_notes', type: 'text' },
      ],
      relations: [{ entity: 'orders', foreignKey: 'customer_id', onDelete: 'restrict' }],
    },
  },
  {
    code: 'orders',
    name: 'Orders',
    table: 'demo_orders',
    prefix: 'ord_',
    identifier: 'ord_id',
    maintainedBy: 'tenant',
    payload: {
      fields: [
        { name: 'id', column: 'ord_id', type: 'integer', readOnly: true },
        {
          name: 'customer_id',
          column: 'ord_customer_id',
          type: 'integer',
          required: true,
          references: { entity: 'customers', field: 'id' },
        },
        { name: 'amount', column: 'ord_amount', type: 'numeric', required: true, min: 0 },
        // ord_status is the record status of spec 2.1; the business status has its own column.
        { name: 'status', column: 'ord_order_status', type: 'select', valueSet: 'order_status' },
        { name: 'ordered_at', column: 'ord_ordered_at', type: 'date' },
      ],
      relations: [],
    },
  },
  {
    code: 'users',
    name: 'Users',
    table: 'app_users',
    prefix: 'usr_',
    identifier: 'usr_id',
    // Users and roles carry permissions: changing them needs admin:system (D21), so a tenant
    // administrator cannot grant itself more than it has.
    maintainedBy: 'system',
    payload: {
      fields: [
        { name: 'id', column: 'usr_id', type: 'integer', readOnly: true },
        {
          name: 'email_id',
          column: 'usr_email_id',
          type: 'email',
          required: true,
          unique: true,
          maxLength: 100,
        },
        { name: 'first_name', column: 'usr_first_name', type: 'text', maxLength: 100 },
        { name: 'last_name', column: 'usr_last_name', type: 'text', maxLength: 100 },
        {
          name: 'role_id',
          column: 'usr_role_id',
          type: 'integer',
          references: { entity: 'roles', field: 'id' },
        },
        { name: 'status', column: 'usr_status', type: 'integer', min: -1, max: 1 },
        { name: 'password_hash', column: 'usr_password_hash', type: 'text', hidden: true },
      ],
      relations: [],
    },
  },
  {
    code: 'roles',
    name: 'Roles',
    table: 'app_roles',
    prefix: 'rol_',
    identifier: 'rol_id',
    maintainedBy: 'system',
    payload: {
      fields: [
        { name: 'id', column: 'rol_id', type: 'integer', readOnly: true },
        { name: 'code', column: 'rol_code', type: 'text', required: true, unique: true, maxLength: 100 },
        { name: 'description', column: 'rol_description', type: 'text', maxLength: 500 },
        { name: 'permissions', column: 'rol_permissions', type: 'json' },
      ],
      relations: [{ entity: 'users', foreignKey: 'role_id', onDelete: 'restrict' }],
    },
  },
];

export interface DemoProfile {
  code: string;
  objectCode: string;
  description: string;
  mode: 'FULL' | 'READ' | 'WRITE' | 'EXECUTE';
  /** prf_policy: keys of both variants of spec 2.6.1 (D23). */
  policy: JsonObject;
}

const ALL_PERMISSIONS = { read: true, write: true, delete: true, export: true, approve: true };
const AUDIT_ON = { enabled: true, logCreations: true, logUpdates: true, logDeletions: true };

export const DEMO_PROFILES: readonly DemoProfile[] = [
  {
    code: 'customers',
    objectCode: 'customers',
    description: 'Customers: internal notes hidden, phone partly masked',
    mode: 'FULL',
    policy: {
      tenantPolicy: { mode: 'STRICT' },
      projection: { type: 'exclude', excludeFields: ['internal_notes'] },
      masking: { phone: 'partial' },
      queryPolicy: { maxPageSize: 500, defaultPageSize: 100, allowAdhocFilters: true },
      permissions: ALL_PERMISSIONS,
      audit: AUDIT_ON,
    },
  },
  {
    code: 'orders',
    objectCode: 'orders',
    description: 'Orders',
    mode: 'FULL',
    policy: { tenantPolicy: { mode: 'STRICT' }, permissions: ALL_PERMISSIONS, audit: AUDIT_ON },
  },
  {
    code: 'users',
    objectCode: 'users',
    description: 'Users: password hash never returned, no deletion',
    mode: 'FULL',
    policy: {
      tenantPolicy: { mode: 'STRICT' },
      projection: { type: 'exclude', excludeFields: ['password_hash'] },
      permissions: { ...ALL_PERMISSIONS, delete: false },
      audit: AUDIT_ON,
    },
  },
  {
    code: 'roles',
    objectCode: 'roles',
    description: 'Roles (read only)',
    mode: 'READ',
    policy: { tenantPolicy: { mode: 'STRICT' } },
  },
];

// ---------------------------------------------------------------------------------------------
// Value sets, dataviews, workflows, navigation (system-wide rows)
// ---------------------------------------------------------------------------------------------

export interface DemoValueSet {
  code: string;
  description: string;
  values: Array<{ code: string; label: string; description: string }>;
}

export const DEMO_VALUE_SETS: readonly DemoValueSet[] = [
  {
    code: 'customer_tiers',
    description: 'Customer tiers',
    values: [
      { code: 'bronze', label: 'Bronze', description: 'Standard terms' },
      { code: 'silver', label: 'Silver', description: 'Higher credit limit' },
      { code: 'gold', label: 'Gold', description: 'Best terms; onboarding needs approval' },
    ],
  },
  {
    code: 'order_status',
    description: 'Order status',
    values: [
      { code: 'new', label: 'New', description: 'Placed, not yet paid' },
      { code: 'paid', label: 'Paid', description: 'Payment received' },
      { code: 'shipped', label: 'Shipped', description: 'Handed to the carrier' },
      { code: 'cancelled', label: 'Cancelled', description: 'Cancelled before shipping' },
    ],
  },
];

function valueOptions(code: string): JsonValue[] {
  const set = DEMO_VALUE_SETS.find((v) => v.code === code);
  return (set?.values ?? []).map((v) => ({ value: v.code, label: v.label }));
}

export interface DemoPage {
  code: string;
  /** pgc_name. */
  name: string;
  type: 'form' | 'dashboard' | 'report' | 'content';
  /** pgc_object_code: the registry code the page edits. */
  objectCode: string;
  /** pgc_schema (spec 2.7): sections[] of {name, fields[]}. */
  schema: JsonObject;
}

/** A form field of spec 2.7: every key present, so an SPA reads one shape. */
function formField(
  fieldCode: string,
  fieldName: string,
  fieldType: string,
  isRequired: boolean,
  validation: JsonObject = {},
  options: JsonValue[] = [],
): JsonObject {
  return { fieldCode, fieldName, fieldType, isRequired, validation, options };
}

export const DEMO_PAGES: readonly DemoPage[] = [
  {
    code: 'customer_form',
    name: 'Customer',
    type: 'form',
    objectCode: 'customers',
    schema: {
      sections: [
        {
          name: 'Customer',
          fields: [
            formField('name', 'Name', 'text', true, { maxLength: 100 }),
            formField('email', 'E-mail', 'email', true),
            formField('tier', 'Tier', 'select', false, {}, valueOptions('customer_tiers')),
            formField('credit_limit', 'Credit limit', 'numeric', false),
          ],
        },
      ],
    },
  },
];

export interface DemoDataview {
  code: string;
  description: string;
  sourceEntity: string;
  isDefault: boolean;
  /** dvc_config, spec 2.9.1. */
  config: JsonObject;
}

const NO_GROUPING = { enableGrouping: false, defaultGroupBy: null, groupableColumns: [] };
const NO_INLINE_EDIT = { enableInlineEdit: false, editableColumns: [], saveOnBlur: false };

export const DEMO_DATAVIEWS: readonly DemoDataview[] = [
  {
    code: 'customers_grid',
    description: 'Customers',
    sourceEntity: 'customers',
    isDefault: true,
    config: {
      dataviewId: 'customers_grid',
      dataviewName: 'Customers',
      dataviewDescription: 'All customers of the tenant',
      source: { entityCode: 'customers', primaryKey: 'id', maxRows: 10000 },
      display: {
        pageSize: 25,
        paginationType: 'offset',
        enableVirtualScrolling: false,
        enableColumnResize: true,
        enableRowSelection: true,
        selectionMode: 'multiple',
        enableToolbar: true,
        toolbarPosition: 'top',
      },
      columns: [
        {
          columnId: 'col_name',
          fieldCode: 'name',
          columnName: 'Name',
          columnOrder: 1,
          columnWidth: 220,
          columnType: 'text',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: true,
          searchable: true,
          align: 'left',
          format: null,
        },
        {
          columnId: 'col_email',
          fieldCode: 'email',
          columnName: 'E-mail',
          columnOrder: 2,
          columnWidth: 260,
          columnType: 'link',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: true,
          align: 'left',
          format: null,
          renderType: 'email',
        },
        {
          columnId: 'col_tier',
          fieldCode: 'tier',
          columnName: 'Tier',
          columnOrder: 3,
          columnWidth: 120,
          columnType: 'select',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'center',
          format: null,
          filterOptions: valueOptions('customer_tiers'),
          cellRenderer: { type: 'badge', colors: { bronze: 'orange', silver: 'gray', gold: 'yellow' } },
        },
        {
          columnId: 'col_credit_limit',
          fieldCode: 'credit_limit',
          columnName: 'Credit limit',
          columnOrder: 4,
          columnWidth: 140,
          columnType: 'numeric',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'right',
          format: 'currency',
          aggregateFunction: 'sum',
        },
        {
          columnId: 'col_actions',
          fieldCode: null,
          columnName: 'Actions',
          columnOrder: 5,
          columnWidth: 120,
          columnType: 'actions',
          isVisible: true,
          isSortable: false,
          isFilterable: false,
          isFrozen: false,
          searchable: false,
          align: 'center',
          format: null,
          actions: [
            {
              actionId: 'view',
              actionName: 'View',
              icon: 'eye',
              onClick: 'openRecord',
              confirmMessage: null,
            },
            {
              actionId: 'edit',
              actionName: 'Edit',
              icon: 'edit',
              onClick: 'editRecord',
              confirmMessage: null,
            },
            {
              actionId: 'delete',
              actionName: 'Delete',
              icon: 'trash',
              onClick: 'deleteRecord',
              confirmMessage: 'Delete this customer?',
            },
          ],
        },
      ],
      filters: {
        enableFiltering: true,
        filterLayout: 'toolbar',
        defaultFilters: [],
        filterOptions: [
          { filterId: 'tier', fieldCode: 'tier', label: 'Tier', operators: ['equals', 'in'], type: 'select' },
          {
            filterId: 'name',
            fieldCode: 'name',
            label: 'Name',
            operators: ['contains', 'starts_with', 'equals'],
            type: 'text',
          },
        ],
      },
      sorting: {
        enableSorting: true,
        defaultSort: [{ fieldCode: 'name', direction: 'asc' }],
        allowMultiSort: true,
      },
      grouping: { enableGrouping: false, defaultGroupBy: null, groupableColumns: ['tier'] },
      inlineEditing: NO_INLINE_EDIT,
      actions: {
        enableRowActions: true,
        enableBulkActions: true,
        bulkActions: [
          {
            actionId: 'export_selected',
            actionName: 'Export selected',
            icon: 'download',
            requireConfirm: false,
          },
          // D52: actions the server runs.
          {
            actionId: 'make_silver',
            actionName: 'Make silver',
            operation: 'update',
            set: { tier: 'silver' },
            requireConfirm: false,
          },
          { actionId: 'delete_selected', actionName: 'Delete', operation: 'delete', requireConfirm: true },
          {
            actionId: 'onboard',
            actionName: 'Start onboarding',
            operation: 'workflow',
            workflowCode: 'customer_onboarding',
            requireConfirm: false,
          },
        ],
      },
      export: {
        enableExport: true,
        exportFormats: ['csv', 'excel', 'pdf'],
        exportFilename: 'customers_{date}',
      },
    },
  },
  {
    code: 'orders_grid',
    description: 'Orders',
    sourceEntity: 'orders',
    isDefault: true,
    config: {
      dataviewId: 'orders_grid',
      dataviewName: 'Orders',
      dataviewDescription: 'Open and completed orders (cancelled ones hidden by default)',
      source: { entityCode: 'orders', primaryKey: 'id', maxRows: 10000 },
      display: {
        pageSize: 25,
        paginationType: 'cursor',
        enableVirtualScrolling: false,
        enableColumnResize: true,
        enableRowSelection: false,
        selectionMode: 'none',
        enableToolbar: true,
        toolbarPosition: 'top',
      },
      columns: [
        {
          columnId: 'col_id',
          fieldCode: 'id',
          columnName: 'Order #',
          columnOrder: 1,
          columnWidth: 100,
          columnType: 'numeric',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: true,
          searchable: false,
          align: 'right',
          format: null,
        },
        {
          columnId: 'col_customer_id',
          fieldCode: 'customer_id',
          columnName: 'Customer',
          columnOrder: 2,
          columnWidth: 120,
          columnType: 'numeric',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'right',
          format: null,
        },
        {
          columnId: 'col_amount',
          fieldCode: 'amount',
          columnName: 'Amount',
          columnOrder: 3,
          columnWidth: 140,
          columnType: 'numeric',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'right',
          format: 'currency',
          aggregateFunction: 'sum',
        },
        {
          columnId: 'col_status',
          fieldCode: 'status',
          columnName: 'Status',
          columnOrder: 4,
          columnWidth: 120,
          columnType: 'select',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'center',
          format: null,
          filterOptions: valueOptions('order_status'),
          cellRenderer: {
            type: 'badge',
            colors: { new: 'blue', paid: 'green', shipped: 'purple', cancelled: 'red' },
          },
        },
        {
          columnId: 'col_ordered_at',
          fieldCode: 'ordered_at',
          columnName: 'Ordered at',
          columnOrder: 5,
          columnWidth: 140,
          columnType: 'date',
          isVisible: true,
          isSortable: true,
          isFilterable: true,
          isFrozen: false,
          searchable: false,
          align: 'left',
          format: 'yyyy-MM-dd',
        },
      ],
      filters: {
        enableFiltering: true,
        filterLayout: 'toolbar',
        defaultFilters: [
          { filterId: 'status', fieldCode: 'status', operator: 'not_equals', value: 'cancelled' },
        ],
        filterOptions: [
          {
            filterId: 'status',
            fieldCode: 'status',
            label: 'Status',
            operators: ['equals', 'not_equals', 'in'],
            type: 'select',
          },
          {
            filterId: 'ordered_at',
            fieldCode: 'ordered_at',
            label: 'Ordered',
            operators: ['between'],
            type: 'daterange',
          },
        ],
      },
      sorting: {
        enableSorting: true,
        defaultSort: [{ fieldCode: 'ordered_at', direction: 'desc' }],
        allowMultiSort: false,
      },
      grouping: NO_GROUPING,
      // D52: the status is edited in the grid; the amount is shown but not editable inline.
      inlineEditing: { enableInlineEdit: true, editableColumns: ['status'], saveOnBlur: true },
      actions: { enableRowActions: false, enableBulkActions: false, bulkActions: [] },
      export: { enableExport: true, exportFormats: ['csv', 'excel'], exportFilename: 'orders_{date}' },
    },
  },
];

export interface DemoWorkflow {
  code: string;
  name: string;
  description: string;
  version: number;
  /** wft_schema (D35). */
  schema: JsonObject;
}

const ERROR_HANDLING = {
  retry: { maxAttempts: 3, backoffMs: 500, backoffMultiplier: 2 },
  onFailure: 'fail',
};

/**
 * Step fields: `next` is the following step id (none = end); a `condition` picks `then`/`else`
 * instead; `onError` is the step to continue at once the step's retries are exhausted.
 * `{{…}}` in config strings are expressions over `input` and `context`.
 */
export const DEMO_WORKFLOWS: readonly DemoWorkflow[] = [
  {
    code: 'customer_onboarding',
    name: 'Customer onboarding',
    description: 'Marks a customer as onboarded; gold customers need an approval first',
    version: 1,
    schema: {
      trigger: { type: 'manual', entityCode: 'customers', input: { customerId: 'integer', tier: 'string' } },
      steps: [
        {
          id: 'start',
          type: 'log',
          config: { level: 'info', message: 'Onboarding customer {{input.customerId}} ({{input.tier}})' },
          next: 'prepare',
        },
        {
          id: 'prepare',
          type: 'set',
          config: { values: { note: 'Onboarded by workflow customer_onboarding v1' } },
          next: 'check_tier',
        },
        {
          id: 'check_tier',
          type: 'condition',
          config: { expression: 'input.tier == "gold"', then: 'approve_gold', else: 'update_customer' },
        },
        {
          id: 'approve_gold',
          type: 'approval',
          config: {
            message: 'Approve onboarding of gold customer {{input.customerId}}',
            permission: 'approve',
          },
          next: 'update_customer',
        },
        {
          id: 'update_customer',
          type: 'entity.update',
          config: {
            entityCode: 'customers',
            id: '{{input.customerId}}',
            values: { internal_notes: '{{context.note}}' },
          },
          next: 'done',
          onError: 'failed',
        },
        {
          id: 'done',
          type: 'log',
          config: { level: 'info', message: 'Customer {{input.customerId}} onboarded' },
        },
        {
          id: 'failed',
          type: 'log',
          config: { level: 'error', message: 'Onboarding of customer {{input.customerId}} failed' },
        },
      ],
      errorHandling: ERROR_HANDLING,
    },
  },
  {
    code: 'customer_onboarding',
    name: 'Customer onboarding',
    description: 'Version 2: also logs the approval request and records the approval in the notes',
    version: 2,
    schema: {
      trigger: { type: 'manual', entityCode: 'customers', input: { customerId: 'integer', tier: 'string' } },
      steps: [
        {
          id: 'start',
          type: 'log',
          config: { level: 'info', message: 'Onboarding customer {{input.customerId}} ({{input.tier}}), v2' },
          next: 'prepare',
        },
        {
          id: 'prepare',
          type: 'set',
          config: { values: { note: 'Onboarded by workflow customer_onboarding v2' } },
          next: 'check_tier',
        },
        {
          id: 'check_tier',
          type: 'condition',
          config: { expression: 'input.tier == "gold"', then: 'announce_approval', else: 'update_customer' },
        },
        {
          id: 'announce_approval',
          type: 'log',
          config: { level: 'info', message: 'Gold customer {{input.customerId}}: waiting for approval' },
          next: 'approve_gold',
        },
        {
          id: 'approve_gold',
          type: 'approval',
          config: {
            message: 'Approve onboarding of gold customer {{input.customerId}}',
            permission: 'approve',
          },
          next: 'note_approval',
        },
        {
          id: 'note_approval',
          type: 'set',
          config: { values: { note: 'Onboarded by workflow customer_onboarding v2 (gold, approved)' } },
          next: 'update_customer',
        },
        {
          id: 'update_customer',
          type: 'entity.update',
          config: {
            entityCode: 'customers',
            id: '{{input.customerId}}',
            values: { internal_notes: '{{context.note}}' },
          },
          next: 'done',
          onError: 'failed',
        },
        {
          id: 'done',
          type: 'log',
          config: { level: 'info', message: 'Customer {{input.customerId}} onboarded (v2)' },
        },
        {
          id: 'failed',
          type: 'log',
          config: { level: 'error', message: 'Onboarding of customer {{input.customerId}} failed (v2)' },
        },
      ],
      errorHandling: ERROR_HANDLING,
    },
  },
];

export interface DemoNavigation {
  code: string;
  /** nav_structure: menu items of type group, dataview or workflow. */
  structure: JsonObject;
}

export const DEMO_NAVIGATIONS: readonly DemoNavigation[] = [
  {
    code: 'main',
    structure: {
      menu: [
        {
          id: 'sales',
          label: 'Sales',
          type: 'group',
          icon: 'briefcase',
          children: [
            {
              id: 'customers',
              label: 'Customers',
              type: 'dataview',
              icon: 'users',
              dataviewCode: 'customers_grid',
            },
            {
              id: 'orders',
              label: 'Orders',
              type: 'dataview',
              icon: 'shopping-cart',
              dataviewCode: 'orders_grid',
            },
          ],
        },
        {
          id: 'processes',
          label: 'Processes',
          type: 'group',
          icon: 'git-branch',
          children: [
            {
              id: 'customer_onboarding',
              label: 'Customer onboarding',
              type: 'workflow',
              icon: 'user-check',
              workflowCode: 'customer_onboarding',
            },
          ],
        },
      ],
    },
  },
];

// ---------------------------------------------------------------------------------------------
// Demo entity rows (deterministic)
// ---------------------------------------------------------------------------------------------

/** Customers and orders per tenant (docs/demo-data.md); initech has none. */
export const DEMO_ROW_COUNTS: Readonly<Record<string, { customers: number; orders: number }>> = {
  acme: { customers: 50, orders: 120 },
  globex: { customers: 30, orders: 60 },
};

export type CustomerTier = 'bronze' | 'silver' | 'gold';
export type OrderStatus = 'new' | 'paid' | 'shipped' | 'cancelled';

export interface DemoCustomer {
  /** N = 1…C within the tenant. */
  number: number;
  name: string;
  email: string;
  phone: string;
  tier: CustomerTier;
  creditLimit: number;
  internalNotes: string;
}

export interface DemoOrder {
  /** N = 1…O within the tenant. */
  number: number;
  /** Number (not id) of the customer within the tenant: ((N − 1) mod C) + 1. */
  customerNumber: number;
  amount: number;
  status: OrderStatus;
  /** YYYY-MM-DD. */
  orderedAt: string;
}

// prettier-ignore
const FIRST_NAMES = [
  'Alice', 'Bruno', 'Chloe', 'Daniel', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ingrid', 'Jonas',
  'Keiko', 'Liam', 'Maya', 'Nikolai', 'Olivia', 'Pedro', 'Quinn', 'Rania', 'Stefan', 'Tara',
];
// 19 (coprime with 20): first and last name pairs do not repeat for 380 customers.
// prettier-ignore
const LAST_NAMES = [
  'Anderson', 'Baptiste', 'Castillo', 'Dubois', 'Eriksen', 'Fischer', 'Garcia', 'Hoffmann', 'Ivanova',
  'Jensen', 'Kowalski', 'Lindqvist', 'Moreau', 'Nakamura', 'Okafor', 'Petrov', 'Rossi', 'Silva', 'Tanaka',
];

/** Every fifth customer is gold; the others alternate bronze, silver (b s b s g b s b s g …). */
export function tierOf(customerNumber: number): CustomerTier {
  if (customerNumber % 5 === 0) return 'gold';
  const nonGoldIndex = customerNumber - Math.floor(customerNumber / 5);
  return nonGoldIndex % 2 === 1 ? 'bronze' : 'silver';
}

function tenantIndex(tenantCode: string): number {
  const index = DEMO_TENANTS.findIndex((t) => t.code === tenantCode);
  if (index < 0) throw new Error(`Unknown demo tenant ${tenantCode}`);
  return index;
}

/** Numbers reserved for fiction: US 555-0100…0199, UK 020 7946 0000…0999. */
const PHONE_OF: Record<string, (n: number) => string> = {
  acme: (n) => `+1 202 555 ${String(100 + (n % 100)).padStart(4, '0')}`,
  globex: (n) => `+44 20 7946 ${String(n % 1000).padStart(4, '0')}`,
};

export function demoCustomers(tenantCode: string): DemoCustomer[] {
  const count = DEMO_ROW_COUNTS[tenantCode]?.customers ?? 0;
  const offset = tenantIndex(tenantCode) * 5;
  const customers: DemoCustomer[] = [];
  for (let n = 1; n <= count; n++) {
    const i = n - 1;
    const tier = tierOf(n);
    const creditLimit =
      tier === 'gold'
        ? 25000 + (n % 7) * 5000
        : tier === 'silver'
          ? 10000 + (n % 5) * 1000
          : 2500 + (n % 4) * 500;
    customers.push({
      number: n,
      name: `${FIRST_NAMES[i % FIRST_NAMES.length]} ${LAST_NAMES[(i * 7 + offset) % LAST_NAMES.length]}`,
      email: `customer${n}@${tenantCode}.example`,
      phone: (PHONE_OF[tenantCode] ?? PHONE_OF.acme)(n),
      tier,
      creditLimit,
      internalNotes: `Account manager #${(n % 4) + 1}. Payment terms net ${tier === 'bronze' ? 14 : 30}. Internal only.`,
    });
  }
  return customers;
}

// prettier-ignore
const STATUS_CYCLE: readonly OrderStatus[] = [
  'new', 'paid', 'shipped', 'paid', 'shipped', 'shipped', 'cancelled', 'new', 'paid', 'shipped',
];
const FIRST_ORDER_DAY = Date.UTC(2025, 0, 2);
const DAY_MS = 24 * 60 * 60 * 1000;

export function demoOrders(tenantCode: string): DemoOrder[] {
  const counts = DEMO_ROW_COUNTS[tenantCode];
  if (!counts) return [];
  const seed = tenantIndex(tenantCode) * 1009;
  const orders: DemoOrder[] = [];
  for (let n = 1; n <= counts.orders; n++) {
    // Whole cents, then /100: the decimal text of the number is exact (e.g. 123.45).
    const cents = 1999 + ((n * 7919 + seed) % 98000);
    orders.push({
      number: n,
      customerNumber: ((n - 1) % counts.customers) + 1,
      amount: cents / 100,
      status: STATUS_CYCLE[(n - 1) % STATUS_CYCLE.length],
      orderedAt: new Date(FIRST_ORDER_DAY + (n - 1) * 2 * DAY_MS).toISOString().slice(0, 10),
    });
  }
  return orders;
}
