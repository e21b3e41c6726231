import { Module } from '@nestjs/common';
import { JwtModule } from '@nestjs/jwt';
import { createSecretKey } from 'node:crypto';
import type { AppConfig } from '../config/config.schema';
import { APP_CONFIG } from '../config/config.module';
import { HealthModule } from '../health/health.module';
import { RecordsModule } from '../records/records.module';
import { TenantModule } from '../tenant/tenant.module';
import { AuthController } from './auth.controller';
import { AuthService } from './auth.service';
import { ChangeTicketGuard } from './change-ticket.guard';
import { ChangeTicketsController } from './change-tickets.controller';
import { ChangeTicketsService } from './change-tickets.service';
import { JwtAuthGuard } from './jwt-auth.guard';
import { RecordsHooksRegistrar } from './records-hooks.registrar';
import { RevocationPurgeService } from './revocation-purge.service';
import { RevocationService } from './revocation.service';
import { RevocationsRepository } from './revocations.repository';
import { RoleChangeSubscriber } from './role-change.subscriber';
import { RolesRepository } from './roles.repository';
import { SigninThrottle } from './signin-throttle';
import { TOKEN_CLOCK_TOLERANCE_S, TokenService } from './token.service';
import { UsersRepository } from './users.repository';

/**
 * JWT issue and verification, password hashing, sign-in, logout, profile, JwtAuthGuard and token
 * revocation (RevocationService, D46); RoleChangeSubscriber drops the cached user states of a tenant
 * when one of its roles is written.
 */
@Module({
  imports: [
    TenantModule,
    // StartupService: the revocation purge runs as a bootstrap step, after the database is ready.
    HealthModule,
    // The records core: auth registers the acting-user lookup and the session revoker with it.
    RecordsModule,
    JwtModule.registerAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        // A KeyObject, not a string: see TokenService.
        secret: createSecretKey(Buffer.from(config.auth.jwtSecret, 'utf8')),
        signOptions: { algorithm: 'HS256' },
        // D13: HS256 only (alg none and every other alg refused); leeway in seconds.
        verifyOptions: { algorithms: ['HS256'], clockTolerance: TOKEN_CLOCK_TOLERANCE_S },
      }),
    }),
  ],
  controllers: [AuthController, ChangeTicketsController],
  providers: [
    AuthService,
    TokenService,
    UsersRepository,
    SigninThrottle,
    JwtAuthGuard,
    ChangeTicketsService,
    ChangeTicketGuard,
    RolesRepository,
    RevocationsRepository,
    RevocationService,
    RevocationPurgeService,
    RoleChangeSubscriber,
    RecordsHooksRegistrar,
  ],
  exports: [TokenService, UsersRepository, JwtAuthGuard, ChangeTicketGuard, AuthService, RevocationService],
})
export class AuthModule {}
