import { Module } from '@nestjs/common';

/** Owns the object registry: entity info resolution, field ↔ column mapping, payload merge (issue 4). */
@Module({})
export class RegistryModule {}
