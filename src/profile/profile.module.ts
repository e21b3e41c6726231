import { Module } from '@nestjs/common';

/** Owns the profile loader and the normalised policy model (issue 4). */
@Module({})
export class ProfileModule {}
