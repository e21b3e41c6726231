import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ProfileModule } from '../profile/profile.module';
import { RegistryModule } from '../registry/registry.module';
import { EntityAuditService } from './audit.service';
import { CascadePlanner } from './cascade-planner';
import { RecordContextFactory } from './record-context.factory';
import { RecordsReadRepository } from './records-read.repository';
import { RecordsWriteRepository } from './records-write.repository';
import { AggregateRecords } from './use-cases/aggregate-records';
import { CreateRecord } from './use-cases/create-record';
import { DeleteRecord } from './use-cases/delete-record';
import { ListRecords, PageRecords, ReadRecord } from './use-cases/read-records';
import { UpdateRecord } from './use-cases/update-record';
import { RecordWriteSupport } from './use-cases/write-support';

const USE_CASES = [ReadRecord, ListRecords, PageRecords, CreateRecord, UpdateRecord, DeleteRecord];

/**
 * The HTTP-free data core (D47): every read and write of tenant data — entity routes, dataviews,
 * exports, workflow steps, sign-up — goes through these use cases with an explicit RecordContext.
 */
@Module({
  imports: [RegistryModule, ProfileModule, AuthModule],
  providers: [
    ...USE_CASES,
    AggregateRecords,
    RecordsReadRepository,
    RecordsWriteRepository,
    RecordWriteSupport,
    CascadePlanner,
    EntityAuditService,
    RecordContextFactory,
  ],
  exports: [...USE_CASES, RecordContextFactory, AggregateRecords, RecordsWriteRepository],
})
export class RecordsModule {}
