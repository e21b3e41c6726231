import { Module } from '@nestjs/common';

/** Owns the generic CRUD routes over registered entities (issue 4). */
@Module({})
export class EntityModule {}
