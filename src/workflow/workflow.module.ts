import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { ProfileModule } from '../profile/profile.module';
import { RecordsModule } from '../records/records.module';
import { WorkflowDefinitionsRepository } from './definition/workflow-definitions.repository';
import { WorkflowDefinitionsService } from './definition/workflow-definitions.service';
import { Approvals } from './engine/approvals';
import { InstanceTransitions } from './engine/transitions';
import { WorkflowEngine } from './engine/workflow-engine';
import { InstancesRepository } from './instance/instances.repository';
import { InstanceJournalRepository } from './instance/journal.repository';
import { WorkflowInstancesService } from './instance/workflow-instances.service';
import { QueueRepository } from './queue/queue.repository';
import { WorkflowWakeBus } from './queue/wake-bus';
import { WorkflowWorker } from './queue/workflow-worker';
import { EntitySteps } from './steps/entity.steps';
import { WorkflowController } from './workflow.controller';
import { WorkflowTelemetry } from './workflow-telemetry';

/**
 * Workflows (spec §2.8, §3.2; D33-D36, D49): definition/ (schema, expressions, versions),
 * instance/ (state machine, instances, node states, logs, the routes' use cases), engine/ (the
 * fenced step runner), steps/ (one file per step type; entity steps call the records core's use
 * cases), queue/ (leases, the worker, the wake bus). DatabaseModule and CacheModule are global.
 */
@Module({
  imports: [RecordsModule, ProfileModule, HealthModule],
  controllers: [WorkflowController],
  providers: [
    WorkflowDefinitionsService,
    WorkflowDefinitionsRepository,
    InstancesRepository,
    InstanceJournalRepository,
    QueueRepository,
    WorkflowWakeBus,
    WorkflowTelemetry,
    EntitySteps,
    InstanceTransitions,
    Approvals,
    WorkflowEngine,
    WorkflowInstancesService,
    WorkflowWorker,
  ],
  exports: [WorkflowInstancesService],
})
export class WorkflowModule {}
