import { Module } from '@nestjs/common';

/** Owns dataview configuration, grid queries, exports and downloads. */
@Module({})
export class DataviewModule {}
