import { Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { DataSource, QueryRunner } from 'typeorm';
import {
  AppError,
  AuthorizationError,
  ConflictError,
  FieldError,
  NotFoundError,
  ServiceError,
  ValidationError,
} from '../common/errors/app-error';
import { Enveloped } from '../common/http/envelope';
import { hasPermission, isSystemAdmin } from '../auth/permissions';
import { applyProjection } from '../profile/policy/masking';
import type { EntityPolicy } from '../profile/policy/policy.model';
import { RegistryService } from '../registry/registry.service';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { EntityAuditEntry, EntityAuditService, auditWanted } from './entity-audit.service';
import { EntityCacheInvalidator } from './entity-cache-invalidator';
import type { QueryContext } from './entity-query';
import { AcceptedValue, CheckedPayload, checkPayload, LAST_MODIFIED_KEY } from './entity-validation';
import { fromDbTimestamp, toDb, toDbTimestamp } from './entity-write-values';
import { EntityWriteRepository, WriteTx } from './entity-write.repository';
import { valueLockName } from './value-lock';
import type { Row } from './entity.repository';
import { fromDb } from './entity-values';
import './entity-request';

const EVENT_TYPE = {
  'entity.created': 'created',
  'entity.updated': 'updated',
  'entity.deleted': 'deleted',
} as const;

/** Depth of cascades followed (D25): a relation cycle or a deep chain stops here. */
const MAX_CASCADE_DEPTH = 5;
const ID = /^\d{1,10}$/;

export interface DeleteResult {
  success: true;
  deletedAt: string;
}

interface Chain {
  entity: EntityInfo;
  policy: EntityPolicy;
  ctx: QueryContext;
  requestId: string;
}

function chain(request: FastifyRequest): Chain {
  const { entity, profile, user, tenant } = request;
  if (!entity || !profile || !user || !tenant) throw new Error('Entity request chain did not run');
  return { entity, policy: profile.policy, ctx: { tenantId: tenant.id, user }, requestId: request.id };
}

/** The identity of a unique value: e-mail addresses compare case-blind (as existsWithValue does). */
function uniqueKey(field: FieldDef, dbValue: unknown): string {
  const text = typeof dbValue === 'string' ? dbValue : JSON.stringify(dbValue);
  return field.type === 'email' ? text.toLowerCase() : text;
}

/**
 * Spec §2.1's optional `version` of the audit data: 1 on create, +1 on every update and delete. A
 * row written before (or outside) the service has none and counts as version 1.
 */
function nextVersion(current: unknown): number {
  return (Number.isSafeInteger(current) && (current as number) > 0 ? (current as number) : 1) + 1;
}

function parseJsonObject(value: unknown): Record<string, unknown> {
  let v = value;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return {};
    }
  }
  return v && typeof v === 'object' && !Array.isArray(v) ? { ...(v as Record<string, unknown>) } : {};
}

/** Fields a snapshot (audit before/after) may hold: never hidden ones (password hashes). */
const snapshotFields = (entity: EntityInfo): FieldDef[] => entity.fields.filter((f) => !f.hidden);

/**
 * The column a NOT NULL violation names, from the driver's error (PostgreSQL's `column`, or the
 * message of SQLite, MariaDB/MySQL and SQL Server); undefined when it cannot be told.
 */
function notNullColumn(d: Record<string, unknown>): string | undefined {
  if (typeof d.column === 'string') return d.column;
  const message = typeof d.message === 'string' ? d.message : '';
  const m =
    /NOT NULL constraint failed: [\w.]*?\.?(\w+)$/.exec(message) ??
    /Column '(\w+)' cannot be null/.exec(message) ??
    /value NULL into column '(\w+)'/.exec(message);
  return m?.[1];
}

/** A DB constraint error turned into the service's codes; anything else is rethrown as is. */
function translateDbError(err: unknown, entity: EntityInfo): unknown {
  if (err instanceof AppError) return err;
  const e = err as { driverError?: Record<string, unknown> } & Record<string, unknown>;
  const d = e?.driverError ?? e ?? {};
  const code = typeof d.code === 'string' ? d.code : '';
  const errno = Number(d.errno ?? d.number ?? NaN);
  if (
    code === '23505' ||
    code === 'ER_DUP_ENTRY' ||
    errno === 2627 ||
    errno === 2601 ||
    /^SQLITE_CONSTRAINT_(UNIQUE|PRIMARYKEY)$/.test(code)
  )
    return new ConflictError('A record with the same unique values already exists');
  if (code === '23502' || errno === 1048 || errno === 515 || code === 'SQLITE_CONSTRAINT_NOTNULL') {
    // A column the registry leaves optional but the table does not (users.status, say).
    const column = notNullColumn(d);
    const field = entity.fields.find((f) => f.column === column)?.name ?? 'body';
    return new ValidationError('Validation failed', [{ field, error: 'must not be null' }]);
  }
  if (code === '23503' || errno === 1452 || errno === 547 || code === 'SQLITE_CONSTRAINT_FOREIGNKEY')
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'references a record that does not exist' },
    ]);
  if (code === '23514' || errno === 3819 || errno === 4025 || code === 'SQLITE_CONSTRAINT_CHECK')
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'a value breaks a rule of the table' },
    ]);
  if (/^22/.test(code) || [1264, 1265, 1292, 1366, 1406, 8115, 8152].includes(errno))
    return new ValidationError('Validation failed', [
      { field: 'body', error: 'a value does not fit its column' },
    ]);
  return err;
}

/**
 * Create, update and delete of registered entities (spec §4.3, §3.1, D4, D21-D25, D29). Every write
 * runs in one transaction with its audit row; caches are invalidated and log events written after the
 * commit. A failed request changes nothing.
 */
@Injectable()
export class EntityWriteService {
  constructor(
    private readonly repository: EntityWriteRepository,
    private readonly registry: RegistryService,
    private readonly audit: EntityAuditService,
    private readonly caches: EntityCacheInvalidator,
  ) {}

  async create(request: FastifyRequest): Promise<Row> {
    const c = chain(request);
    const { entity, policy, ctx } = c;
    const checked = checkPayload(entity, policy, request.body, 'create');
    const secrets = checked.errors.length === 0 ? await this.transformSecrets(entity, checked.secrets) : [];
    const now = Date.now();
    const { id, entry } = await this.withTransaction(c, async (tx) => {
      await this.lockUniqueValues(tx, entity, ctx.tenantId, checked.values);
      const errors = [
        ...checked.errors,
        ...(await this.checkAgainstDb(tx, entity, ctx.tenantId, checked.values)),
      ];
      if (errors.length > 0) throw new ValidationError('Validation failed', errors);
      const row: Row = {};
      for (const v of checked.values) row[v.field.column] = toDb(v.field, v.value);
      for (const s of secrets) row[s.column] = s.value;
      const cols = entity.columns;
      row[cols.tenant] = Number(ctx.tenantId);
      if (!(cols.status in row)) row[cols.status] = 1;
      row[cols.isDeleted] = 0;
      row[cols.auditData] = JSON.stringify({
        created_by: ctx.user.email,
        created_at: new Date(now).toISOString(),
        version: 1,
      });
      row[cols.lastModified] = toDbTimestamp(now);
      const newId = await this.repository.insert(tx.data, entity, row);
      const after = this.snapshot(entity, newId, checked.values);
      const auditEntry = this.entry(c, 'entity.created', newId, null, after, now);
      if (auditWanted(policy.audit, auditEntry.event)) await this.audit.record(tx.config, auditEntry);
      return { id: newId, entry: auditEntry };
    });
    await this.afterCommit(c, entry, [{ entity, ids: [id] }]);
    return this.present(entity, policy, id, checked.values, now);
  }

  async update(request: FastifyRequest, idParam: string): Promise<Row> {
    const c = chain(request);
    const { entity, policy, ctx } = c;
    const body = request.body;
    const expected = this.expectedLastModified(request);
    const checked = checkPayload(entity, policy, body, 'update');
    if (checked.errors.length === 0 && checked.values.length === 0 && checked.secrets.length === 0)
      checked.errors.push({ field: 'body', error: 'names no field to update' });
    if (expected.error) checked.errors.unshift(expected.error);
    // D24: a missing or unreadable lastModified is refused before anything is read.
    if (expected.error) throw new ValidationError('Validation failed', checked.errors);
    if (!ID.test(idParam)) throw new NotFoundError(`${entity.code} ${idParam} not found`);
    const id = Number(idParam);
    const secrets = checked.errors.length === 0 ? await this.transformSecrets(entity, checked.secrets) : [];
    const fields = snapshotFields(entity);

    const { entry, now } = await this.withTransaction(c, async (tx) => {
      await this.lockUniqueValues(tx, entity, ctx.tenantId, checked.values);
      // Rule 1: the existing record, in the caller's write scope.
      const existing = await this.repository.load(tx.data, entity, policy, ctx, fields, id);
      if (!existing) throw new NotFoundError(`${entity.code} ${id} not found`);
      // Rule 2: validation; uniqueness only where the value changes.
      const changed = checked.values.filter(
        (v) => !this.sameValue(v.field, existing.fields[v.field.name], v.value),
      );
      const errors = [
        ...checked.errors,
        ...(await this.checkAgainstDb(tx, entity, ctx.tenantId, changed, id)),
      ];
      if (errors.length > 0) throw new ValidationError('Validation failed', errors);
      // Rule 3: optimistic concurrency (D24).
      const storedMs = fromDbTimestamp(existing.lastModifiedRaw, tx.driverType);
      if (storedMs !== null && storedMs !== expected.ms) throw this.stale(entity, id, storedMs);
      // Strictly later than the stored value, so a token is never valid twice.
      const at = Math.max(Date.now(), (storedMs ?? 0) + 1);
      const set: Row = {};
      for (const v of checked.values) set[v.field.column] = toDb(v.field, v.value);
      for (const s of secrets) set[s.column] = s.value;
      const audit = parseJsonObject(existing.auditRaw);
      audit.updated_by = ctx.user.email;
      audit.updated_at = new Date(at).toISOString();
      audit.version = nextVersion(audit.version);
      set[entity.columns.auditData] = JSON.stringify(audit);
      set[entity.columns.lastModified] = toDbTimestamp(at);
      // Rule 4: scoped by id, tenant and not deleted, and a compare-and-set on the value just read.
      const affected = await this.repository.update(tx.data, entity, policy, ctx, id, set, {
        value: existing.lastModifiedRaw,
      });
      if (affected !== 1) {
        const now2 = await this.repository.load(tx.data, entity, policy, ctx, fields, id);
        if (!now2) throw new NotFoundError(`${entity.code} ${id} not found`);
        throw this.stale(entity, id, fromDbTimestamp(now2.lastModifiedRaw, tx.driverType));
      }
      const before = this.typed(fields, existing.fields);
      const after = { ...before, ...this.snapshot(entity, id, checked.values) };
      const auditEntry = this.entry(c, 'entity.updated', id, before, after, at);
      if (auditWanted(policy.audit, auditEntry.event)) await this.audit.record(tx.config, auditEntry);
      return { entry: auditEntry, now: at };
    });
    await this.afterCommit(c, entry, [{ entity, ids: [id] }]);
    return this.present(entity, policy, id, checked.values, now);
  }

  async remove(request: FastifyRequest, idParam: string): Promise<Enveloped<DeleteResult>> {
    const c = chain(request);
    const { entity, policy, ctx } = c;
    const cascadeParam = (request.query as Record<string, unknown>).cascade;
    if (cascadeParam !== undefined && cascadeParam !== 'true' && cascadeParam !== 'false') {
      throw new ValidationError('Invalid query', [{ field: 'cascade', error: 'must be true or false' }]);
    }
    const cascade = cascadeParam === 'true';
    if (!ID.test(idParam)) throw new NotFoundError(`${entity.code} ${idParam} not found`);
    const id = Number(idParam);
    const fields = snapshotFields(entity);
    const now = Date.now();
    const deletedAt = new Date(now).toISOString();

    const { entry, removed } = await this.withTransaction(c, async (tx) => {
      const existing = await this.repository.load(tx.data, entity, policy, ctx, fields, id);
      if (!existing) throw new NotFoundError(`${entity.code} ${id} not found`);
      const plan = await this.dependents(tx, entity, [id], cascade, ctx.tenantId, 0);
      if (plan.blocked.size > 0) {
        throw new ConflictError(`${entity.code} ${id} has dependent records; delete with cascade=true`, {
          dependentEntities: [...plan.blocked].map(([code, count]) => ({ entity: code, count })),
        });
      }
      const storedMs = fromDbTimestamp(existing.lastModifiedRaw, tx.driverType);
      const at = Math.max(now, (storedMs ?? 0) + 1);
      const affected = await this.repository.update(
        tx.data,
        entity,
        policy,
        ctx,
        id,
        this.softDeleteSet(entity, existing.auditRaw, ctx, at),
      );
      if (affected !== 1) throw new NotFoundError(`${entity.code} ${id} not found`);
      // D25: dependents go in the same transaction. Deleting them is the caller's act too: the
      // role must hold delete on each dependent entity (and admin:system for system-maintained ones).
      for (const step of plan.cascade) {
        const dep = step.entity;
        const granted = ctx.user.permissions;
        if (!hasPermission(granted, 'delete:entity') && !hasPermission(granted, `delete:${dep.code}`)) {
          throw new AuthorizationError(`Permission delete:${dep.code} required to cascade to ${dep.code}`);
        }
        if (dep.maintainedBy === 'system' && !isSystemAdmin(granted)) {
          throw new AuthorizationError(`Entity ${dep.code} is maintained by the system`);
        }
      }
      for (const step of plan.cascade) {
        for (const row of step.rows) {
          await this.repository.updateTenantRow(
            tx.data,
            step.entity,
            ctx.tenantId,
            row.id,
            this.softDeleteSet(step.entity, row.auditRaw, ctx, at),
          );
        }
      }
      const cascaded = plan.cascade.map((s) => ({ entity: s.entity.code, ids: s.rows.map((r) => r.id) }));
      const before = this.typed(fields, existing.fields);
      const after = { deleted_by: ctx.user.email, deleted_at: deletedAt, cascaded };
      const auditEntry = this.entry(c, 'entity.deleted', id, before, after, at);
      if (auditWanted(policy.audit, auditEntry.event)) {
        await this.audit.record(tx.config, auditEntry);
        // Every cascaded row gets an audit row of its own, pointing back at the parent.
        for (const step of plan.cascade) {
          for (const row of step.rows) {
            await this.audit.record(tx.config, {
              ...auditEntry,
              entityCode: step.entity.code,
              recordId: row.id,
              before: null,
              after: {
                deleted_by: ctx.user.email,
                deleted_at: deletedAt,
                cascadedFrom: { entity: entity.code, id },
              },
            });
          }
        }
      }
      return {
        entry: auditEntry,
        removed: [
          { entity, ids: [id] },
          ...plan.cascade.map((s) => ({ entity: s.entity, ids: s.rows.map((r) => r.id) })),
        ],
      };
    });
    await this.afterCommit(c, entry, removed);
    return new Enveloped<DeleteResult>({ success: true, deletedAt }, { deletedAt });
  }

  // -------------------------------------------------------------------------------------------

  /** D24: `lastModified` from the body, else the If-Match header (quotes and W/ allowed). */
  private expectedLastModified(request: FastifyRequest): { ms: number; error?: FieldError } {
    const body = request.body as Record<string, unknown> | undefined;
    const fromBody =
      body && typeof body === 'object' && !Array.isArray(body) ? body[LAST_MODIFIED_KEY] : undefined;
    const header = request.headers['if-match'];
    const fromHeader =
      typeof header === 'string'
        ? header
            .trim()
            .replace(/^W\//, '')
            .replace(/^"(.*)"$/, '$1')
        : undefined;
    const parse = (v: unknown): number =>
      typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(v)
        ? Date.parse(v)
        : typeof v === 'number'
          ? v
          : NaN;
    if (fromBody === undefined && (fromHeader === undefined || fromHeader === '')) {
      return {
        ms: NaN,
        error: { field: LAST_MODIFIED_KEY, error: 'is required (body lastModified or If-Match header)' },
      };
    }
    const ms = parse(fromBody ?? fromHeader);
    if (!Number.isFinite(ms))
      return { ms, error: { field: LAST_MODIFIED_KEY, error: 'must be an ISO 8601 timestamp' } };
    if (fromBody !== undefined && fromHeader) {
      const other = parse(fromHeader);
      if (other !== ms)
        return { ms, error: { field: 'If-Match', error: 'differs from lastModified in the body' } };
    }
    return { ms };
  }

  private stale(entity: EntityInfo, id: number, storedMs: number | null): ConflictError {
    return new ConflictError(`${entity.code} ${id} was changed by someone else; reload it and retry`, {
      lastModified: storedMs === null ? null : new Date(storedMs).toISOString(),
    });
  }

  /** Write-only inputs (users.password → argon2id hash, D12), hashed before the transaction opens. */
  private async transformSecrets(
    entity: EntityInfo,
    secrets: CheckedPayload['secrets'],
  ): Promise<Array<{ column: string; value: string }>> {
    const out: Array<{ column: string; value: string }> = [];
    for (const s of secrets) {
      const field = entity.fields.find((f) => f.name === s.secret.field && f.hidden);
      if (!field) throw new ServiceError(`Write-only input ${s.secret.input} has no target field`);
      out.push({ column: field.column, value: await s.secret.transform(s.plain) });
    }
    return out;
  }

  /**
   * Takes the locks of the unique values a write names (value-lock.ts) as the transaction's first
   * statement, so a concurrent writer of the same value waits until this transaction has ended, and
   * every read after it (snapshot isolation included) sees that writer's committed row.
   */
  private async lockUniqueValues(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    values: AcceptedValue[],
  ): Promise<void> {
    const unique = values.filter((v) => v.field.unique && v.value !== null && v.value !== undefined);
    await this.repository.lockValues(
      tx,
      unique.map(({ field, value }) =>
        valueLockName({
          table: entity.table,
          tenantId,
          column: field.column,
          value: uniqueKey(field, toDb(field, value)),
        }),
      ),
    );
  }

  /** Value sets, uniqueness and references of accepted values (create rule 1, update rule 2). */
  private async checkAgainstDb(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    values: AcceptedValue[],
    exceptId?: number,
  ): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    for (const { field, value } of values) {
      if (value === null || value === undefined) continue;
      if (field.valueSet !== undefined) {
        const codes = await this.repository.valueSetCodes(tx.config, field.valueSet, tenantId);
        if (!codes || typeof value !== 'string' || !codes.has(value)) {
          errors.push({ field: field.name, error: `must be one of the values of ${field.valueSet}` });
          continue;
        }
      }
      if (
        field.unique &&
        (await this.repository.existsWithValue(
          tx.data,
          entity,
          tenantId,
          field,
          toDb(field, value),
          exceptId,
        ))
      ) {
        errors.push({ field: field.name, error: 'must be unique; the value is already used' });
        continue;
      }
      if (field.references) {
        const target = await this.registry.resolve(tenantId, field.references.entity);
        const targetField = target?.fields.find((f) => f.name === field.references?.field);
        const found =
          target !== undefined &&
          targetField !== undefined &&
          (await this.onRunnerOf(tx, target, tenantId, (qr) =>
            this.repository.existsWithValue(qr, target, tenantId, targetField, value),
          ));
        if (!found)
          errors.push({
            field: field.name,
            error: `must reference an existing ${field.references.entity} record`,
          });
      }
    }
    return errors;
  }

  /**
   * Runs a read of `entity` on the write's runner for its database, or, for a third database, on a
   * runner of its own (a reference check across connections is a read, never part of the write).
   */
  private async onRunnerOf<T>(
    tx: WriteTx,
    entity: EntityInfo,
    tenantId: string,
    read: (qr: QueryRunner) => Promise<T>,
  ): Promise<T> {
    const ds: DataSource = this.repository.dataSourceFor(entity, tenantId);
    if (ds === tx.dataSource) return read(tx.data);
    if (ds === tx.config.connection) return read(tx.config);
    const qr = ds.createQueryRunner();
    try {
      return await read(qr);
    } finally {
      await qr.release();
    }
  }

  /**
   * Live dependents of `ids` (D25, spec delete rules 3 and 5). Relations with onDelete `restrict`
   * block the delete unless cascade=true; with cascade=true they are soft-deleted as well. Relations
   * with onDelete `cascade` are soft-deleted whenever the delete goes ahead. Followed recursively.
   */
  private async dependents(
    tx: WriteTx,
    entity: EntityInfo,
    ids: number[],
    cascade: boolean,
    tenantId: string,
    depth: number,
  ): Promise<{
    blocked: Map<string, number>;
    cascade: Array<{ entity: EntityInfo; rows: Array<{ id: number; auditRaw: unknown }> }>;
  }> {
    const out = {
      blocked: new Map<string, number>(),
      cascade: [] as Array<{ entity: EntityInfo; rows: Array<{ id: number; auditRaw: unknown }> }>,
    };
    if (ids.length === 0) return out;
    if (depth >= MAX_CASCADE_DEPTH)
      throw new ServiceError(`Cascade of ${entity.code} is deeper than ${MAX_CASCADE_DEPTH}`);
    for (const relation of entity.relations) {
      const dependent = await this.registry.resolve(tenantId, relation.entity);
      const fk = dependent?.fields.find((f) => f.name === relation.foreignKey);
      // A relation that cannot be resolved fails closed: no delete that could orphan rows.
      if (!dependent || !fk)
        throw new ServiceError(`Relation ${entity.code} → ${relation.entity} is not usable`);
      // D25 deletes dependents in the parent's transaction, which one database can give.
      if (this.repository.dataSourceFor(dependent, tenantId) !== tx.dataSource)
        throw new AppError(
          'NOT_IMPLEMENTED',
          `Relation ${entity.code} → ${dependent.code} spans two connections; deletes across them are not supported`,
        );
      const rows = await this.repository.liveRowsReferencing(tx.data, dependent, tenantId, fk, ids);
      if (rows.length === 0) continue;
      if (relation.onDelete === 'restrict' && !cascade) {
        out.blocked.set(dependent.code, (out.blocked.get(dependent.code) ?? 0) + rows.length);
        continue;
      }
      // D22: a VIEW or FUNCTION is never written, a cascade included (an updatable view would
      // otherwise soft-delete rows of its base table behind the registry's back).
      if (dependent.type !== 'TABLE')
        throw new ConflictError(
          `${entity.code} has dependent ${dependent.code} rows, a ${dependent.type} object that cannot be deleted through`,
          { dependentEntities: [{ entity: dependent.code, count: rows.length }] },
        );
      out.cascade.push({ entity: dependent, rows });
      const deeper = await this.dependents(
        tx,
        dependent,
        rows.map((r) => r.id),
        cascade,
        tenantId,
        depth + 1,
      );
      for (const [code, count] of deeper.blocked) out.blocked.set(code, (out.blocked.get(code) ?? 0) + count);
      out.cascade.push(...deeper.cascade);
    }
    return out;
  }

  /** Spec §3.1, D4: is_deleted = 1, deleted_by/deleted_at in the audit data, last_modified. */
  private softDeleteSet(entity: EntityInfo, auditRaw: unknown, ctx: QueryContext, at: number): Row {
    const audit = parseJsonObject(auditRaw);
    audit.deleted_by = ctx.user.email;
    audit.deleted_at = new Date(at).toISOString();
    audit.version = nextVersion(audit.version);
    return {
      [entity.columns.isDeleted]: 1,
      [entity.columns.auditData]: JSON.stringify(audit),
      [entity.columns.lastModified]: toDbTimestamp(at),
    };
  }

  private sameValue(field: FieldDef, stored: unknown, value: unknown): boolean {
    const a = fromDb(field, stored);
    const b = fromDb(field, toDb(field, value));
    return field.type === 'email' && typeof a === 'string' && typeof b === 'string'
      ? a.toLowerCase() === b.toLowerCase()
      : JSON.stringify(a) === JSON.stringify(b);
  }

  private typed(fields: FieldDef[], raw: Row): Row {
    const out: Row = {};
    for (const f of fields) out[f.name] = fromDb(f, raw[f.name]);
    return out;
  }

  /** `{id, ...values}` in JSON form, hidden fields left out. */
  private snapshot(entity: EntityInfo, id: number, values: AcceptedValue[]): Row {
    const out: Row = {};
    const key = entity.fields.find((f) => f.column === entity.primaryKeyColumn);
    if (key) out[key.name] = id;
    for (const v of values) if (!v.field.hidden) out[v.field.name] = fromDb(v.field, toDb(v.field, v.value));
    return out;
  }

  /** The response: `{id, ...payload, lastModified}`, through the profile's projection and masking. */
  private present(
    entity: EntityInfo,
    policy: EntityPolicy,
    id: number,
    values: AcceptedValue[],
    at: number,
  ): Row {
    const record = { ...this.snapshot(entity, id, values), lastModified: new Date(at).toISOString() };
    return { id, ...applyProjection(record, policy, entity.fields, { passThrough: ['lastModified'] }) };
  }

  private entry(
    c: Chain,
    event: EntityAuditEntry['event'],
    recordId: number,
    before: Row | null,
    after: Row | null,
    at: number,
  ): EntityAuditEntry {
    return {
      event,
      tenantId: c.ctx.tenantId,
      userId: c.ctx.user.userId,
      entityCode: c.entity.code,
      recordId,
      before,
      after,
      requestId: c.requestId,
      at,
    };
  }

  /** The write's transaction on the entity's database (D3), with DB constraint errors translated. */
  private async withTransaction<T>(c: Chain, work: (tx: WriteTx) => Promise<T>): Promise<T> {
    const ds = this.repository.dataSourceFor(c.entity, c.ctx.tenantId);
    try {
      return await this.repository.transaction(ds, work);
    } catch (err) {
      throw translateDbError(err, c.entity);
    }
  }

  private async afterCommit(
    c: Chain,
    entry: EntityAuditEntry,
    changed: Array<{ entity: EntityInfo; ids: number[] }>,
  ): Promise<void> {
    if (auditWanted(c.policy.audit, entry.event)) this.audit.log(entry);
    // D37's event type: entity.created → created, and so on (cascaded rows are deleted too).
    const type = EVENT_TYPE[entry.event];
    for (const x of changed) await this.caches.invalidate(c.ctx.tenantId, x.entity.code, x.ids, type);
  }
}
