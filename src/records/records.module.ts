import { Module } from '@nestjs/common';
import { ProfileModule } from '../profile/profile.module';
import { RegistryModule } from '../registry/registry.module';
import { EntityAuditService } from './audit.service';
import { CascadePlanner } from './cascade-planner';
import { RecordContextFactory } from './record-context.factory';
import { RecordHooks } from './record-hooks';
import { OutboxRepository } from './outbox/outbox.repository';
import { RecordsReadRepository } from './records-read.repository';
import { RecordsWriteRepository } from './records-write.repository';
import { AggregateRecords } from './use-cases/aggregate-records';
import { CreateRecord } from './use-cases/create-record';
import { DeleteRecord } from './use-cases/delete-record';
import { ListRecords, PageRecords, ReadRecord } from './use-cases/read-records';
import { UpdateRecord } from './use-cases/update-record';
import { RecordHistory } from './use-cases/record-history';
import { RestoreVersion } from './use-cases/restore-record';
import { UndeleteRecord } from './use-cases/undelete-record';
import { HistoryRepository } from './history/history.repository';
import { BulkRecords } from './use-cases/bulk-records';
import { RecordWriteSupport } from './use-cases/write-support';

const USE_CASES = [
  ReadRecord,
  ListRecords,
  PageRecords,
  CreateRecord,
  UpdateRecord,
  DeleteRecord,
  RecordHistory,
  RestoreVersion,
  UndeleteRecord,
  BulkRecords,
];

/**
 * The HTTP-free data core (D47): every read and write of tenant data — entity routes, dataviews,
 * exports, workflow steps, sign-up — goes through these use cases with an explicit RecordContext.
 */
@Module({
  imports: [RegistryModule, ProfileModule],
  providers: [
    ...USE_CASES,
    AggregateRecords,
    RecordsReadRepository,
    RecordsWriteRepository,
    RecordWriteSupport,
    CascadePlanner,
    HistoryRepository,
    EntityAuditService,
    RecordContextFactory,
    RecordHooks,
    OutboxRepository,
  ],
  exports: [
    OutboxRepository,
    ...USE_CASES,
    RecordContextFactory,
    RecordHooks,
    AggregateRecords,
    RecordsWriteRepository,
    HistoryRepository,
  ],
})
export class RecordsModule {}
