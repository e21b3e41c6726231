import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller';
import { HttpDrainService } from './http-drain.service';
import { HttpHooksService } from './http-hooks.service';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { ProbeChecks } from './probe-checks';
import { ReadinessService } from './readiness.service';
import { StartupService } from './startup.service';

@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController, MetricsController],
  providers: [
    ReadinessService,
    StartupService,
    MetricsService,
    HttpHooksService,
    HttpDrainService,
    ProbeChecks,
  ],
  exports: [ReadinessService, StartupService, MetricsService, HttpDrainService],
})
export class HealthModule {}
