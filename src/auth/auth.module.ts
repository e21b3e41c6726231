import { Module } from '@nestjs/common';

/** Owns JWT issue and verification, password hashing (password.ts), sign-in and sign-up (issue 3). */
@Module({})
export class AuthModule {}
