import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { createSecretKey } from 'node:crypto';
import type { AppConfig } from '../config/config.schema';
import { APP_CONFIG } from '../config/config.module';
import { TenantModule } from '../tenant/tenant.module';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { JwtAuthGuard } from './jwt-auth.guard';
import { MailerService } from './mailer.service';
import { RolesRepository } from './roles.repository';
import { SigninThrottle } from './signin-throttle';
import { SignupController } from './signup.controller';
import { SignupService } from './signup.service';
import { TokenService } from './token.service';
import { UsersRepository } from './users.repository';

/** JWT issue and verification, password hashing, sign-in, logout, profile and JwtAuthGuard. */
@Module({
  imports: [
    TenantModule,
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        // A KeyObject, not a string: see TokenService.
        secret: createSecretKey(Buffer.from(config.auth.jwtSecret, 'utf8')),
        signOptions: { algorithm: 'HS256' },
        // D13: HS256 only (alg none and every other alg refused); leeway in seconds.
        verifyOptions: { algorithms: ['HS256'], clockTolerance: 5 },
      }),
    }),
  ],
  controllers: [AuthController, SignupController],
  providers: [
    AuthService,
    TokenService,
    UsersRepository,
    SigninThrottle,
    JwtAuthGuard,
    SignupService,
    MailerService,
    RolesRepository,
  ],
  exports: [TokenService, UsersRepository, JwtAuthGuard, AuthService],
})
export class AuthModule {}
