import { Injectable } from '@nestjs/common';
import { AppError, ConflictError, ServiceError } from '../common/errors/app-error';
import { RegistryService } from '../registry/registry.service';
import type { EntityInfo } from '../registry/registry.types';
import { RecordsWriteRepository } from './records-write.repository';
import { WriteTx } from './write-tx';

/** Depth of cascades followed (D25): a relation cycle or a deep chain stops here. */
const MAX_CASCADE_DEPTH = 5;

export interface CascadePlan {
  /** Restrict relations with live dependents, by entity code: the delete needs cascade=true. */
  blocked: Map<string, number>;
  /** Dependents to soft-delete with the parent, parents before children. */
  cascade: Array<{ entity: EntityInfo; rows: Array<{ id: number; auditRaw: unknown }> }>;
}

/** What a delete reaches through the registry's relations (D25), with the dependents locked. */
@Injectable()
export class CascadePlanner {
  constructor(
    private readonly repository: RecordsWriteRepository,
    private readonly registry: RegistryService,
  ) {}

  /**
   * Live dependents of `ids` (D25, spec delete rules 3 and 5). Relations with onDelete `restrict`
   * block the delete unless cascade=true; with cascade=true they are soft-deleted as well. Relations
   * with onDelete `cascade` are soft-deleted whenever the delete goes ahead. Followed recursively.
   */
  async plan(
    tx: WriteTx,
    entity: EntityInfo,
    ids: number[],
    cascade: boolean,
    tenantId: string,
    depth: number,
  ): Promise<CascadePlan> {
    const out: CascadePlan = { blocked: new Map<string, number>(), cascade: [] };
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
      // Locked like the parent: a dependent that is cascaded is a parent being deleted in turn.
      const rows = await this.repository.liveRowsReferencing(
        tx.data,
        dependent,
        tenantId,
        fk,
        ids,
        'parent-of-delete',
      );
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
          'dependents_exist',
        );
      out.cascade.push({ entity: dependent, rows });
      const deeper = await this.plan(
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
}
