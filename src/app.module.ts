import { DynamicModule, Module, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import { AdminModule } from './admin/admin.module';
import { AuthModule } from './auth/auth.module';
import { SignupModule } from './auth/signup.module';
import { ChangeTicketGuard } from './auth/change-ticket.guard';
import { JwtAuthGuard } from './auth/jwt-auth.guard';
import { CacheModule } from './cache/cache.module';
import { CatalogModule } from './catalog/catalog.module';
import { ConfigDeliveryModule } from './config-delivery/config-delivery.module';
import { AddressLimitGuard } from './http/address-limit.guard';
import { AllExceptionsFilter } from './http/all-exceptions.filter';
import { createValidationPipe } from './common/http/validation.pipe';
import { pinoParams } from './common/logging';
import type { AppConfig } from './config/config.schema';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DevUiModule } from './dev-ui/dev-ui.module';
import { DataviewModule } from './dataview/dataview.module';
import { EntityModule } from './entity/entity.module';
import { HealthModule } from './health/health.module';
import { ProfileModule } from './profile/profile.module';
import { RegistryModule } from './registry/registry.module';
import { TenantGuard } from './tenant/tenant.guard';
import { TenantRateLimitGuard } from './tenant/tenant-rate-limit.guard';
import { TenantModule } from './tenant/tenant.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { WorkflowModule } from './workflow/workflow.module';

/**
 * The root module. Cross-cutting behaviour (filter, envelope, validation, logging, Fastify hooks)
 * is registered here, so every app built from it — tests included — has the same pipeline.
 */
@Module({})
export class AppModule {
  /** `extraModules`: modules added beside the product's (the e2e tests' probe routes). */
  static forRoot(config: AppConfig, extraModules: Type[] = []): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot(pinoParams(config)),
        DatabaseModule,
        CacheModule,
        HealthModule,
        TenantModule,
        AuthModule,
        SignupModule,
        RegistryModule,
        ProfileModule,
        CatalogModule,
        EntityModule,
        DataviewModule,
        WorkflowModule,
        ConfigDeliveryModule,
        AdminModule,
        WebhooksModule,
        DevUiModule,
        ...extraModules,
      ],
      providers: [
        AddressLimitGuard,
        // Guards run in this order: per-address limits (unauthenticated traffic, before any work),
        // tenant header and token (spec §4.1 rule 2), then the per-tenant rate limit (D39), which
        // only authenticated requests spend.
        { provide: APP_GUARD, useExisting: AddressLimitGuard },
        // A change-stream ticket (D55) stands for the tenant header and the token: redeemed first.
        { provide: APP_GUARD, useExisting: ChangeTicketGuard },
        { provide: APP_GUARD, useExisting: TenantGuard },
        { provide: APP_GUARD, useExisting: JwtAuthGuard },
        { provide: APP_GUARD, useExisting: TenantRateLimitGuard },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_PIPE, useFactory: createValidationPipe },
      ],
    };
  }
}
