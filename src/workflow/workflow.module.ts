import { Module } from '@nestjs/common';

/** Owns workflow definitions, instances, the engine and the queue worker. */
@Module({})
export class WorkflowModule {}
