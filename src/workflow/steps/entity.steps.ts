import { Injectable } from '@nestjs/common';
import { AuthorizationError, ValidationError } from '../../common/errors/app-error';
import type { RecordContext } from '../../records/record-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import { CreateRecord } from '../../records/use-cases/create-record';
import { ReadRecord } from '../../records/use-cases/read-records';
import { UpdateRecord } from '../../records/use-cases/update-record';
import { renderTemplate } from '../definition/templates';
import type { CommitStep, StepHandler, StepRun } from '../engine/step-types';

/**
 * Entity steps act as the user who started the instance, as the database has that user now
 * (RecordContextFactory), through the records core's use cases — the one write path, with its
 * validation, profile, row filter, audit, cache invalidation and collection events; the use
 * cases take the access decision (canPerform) as they do for a request. The write, the step's node state and its idempotency
 * key commit in one transaction (WriteHooks.beforeCommit), so a step delivered twice writes once.
 */
@Injectable()
export class EntitySteps {
  constructor(
    private readonly contexts: RecordContextFactory,
    private readonly read: ReadRecord,
    private readonly create: CreateRecord,
    private readonly update: UpdateRecord,
  ) {}

  readonly createStep: StepHandler = {
    type: 'entity.create',
    run: (run, commit) => this.runCreate(run, commit),
  };

  readonly updateStep: StepHandler = {
    type: 'entity.update',
    run: (run, commit) => this.runUpdate(run, commit),
  };

  /** The step's entity as the instance's starter, as the database has that user now. */
  private async context(run: StepRun): Promise<RecordContext> {
    const { instance, step } = run;
    if (instance.startedBy === null) throw new AuthorizationError('The instance has no user to act as');
    return this.contexts.fromIds({
      tenantId: instance.tenantId,
      userId: instance.startedBy,
      entityCode: String(step.config.entityCode),
      requestId: instance.requestId ?? `workflow-${instance.id}`,
    });
  }

  private values(run: StepRun): Record<string, unknown> {
    const values = renderTemplate(run.step.config.values ?? {}, run.scope);
    if (!values || typeof values !== 'object' || Array.isArray(values))
      throw new ValidationError('Validation failed', [
        { field: `${run.step.id}.values`, error: 'must be an object' },
      ]);
    return values as Record<string, unknown>;
  }

  private async runCreate(run: StepRun, commit: CommitStep): Promise<void> {
    const ctx = await this.context(run);
    const values = this.values(run);
    const entityCode = ctx.entity.code;
    await this.create.execute(ctx, values, {
      beforeCommit: (tx, id) =>
        commit({ kind: 'advance', output: { entityCode, id }, record: { ...values, id } }, tx),
    });
  }

  private async runUpdate(run: StepRun, commit: CommitStep): Promise<void> {
    const ctx = await this.context(run);
    const rendered = renderTemplate(run.step.config.id, run.scope);
    const id = Number(rendered);
    if (!Number.isSafeInteger(id) || id < 1)
      throw new ValidationError('Validation failed', [
        { field: `${run.step.id}.id`, error: `must be a positive integer (got ${JSON.stringify(rendered)})` },
      ]);
    const values = this.values(run);
    // The current token (D24): a concurrent change in between makes the update a stale_record conflict, which retries.
    const current = await this.read.execute(ctx, id);
    const token = current.lastModified;
    const expected = { ms: typeof token === 'string' ? Date.parse(token) : null };
    const entityCode = ctx.entity.code;
    await this.update.execute(ctx, id, values, expected, {
      beforeCommit: (tx) =>
        commit({ kind: 'advance', output: { entityCode, id }, record: { ...values, id } }, tx),
    });
  }
}
