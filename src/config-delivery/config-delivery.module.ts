import { Module } from '@nestjs/common';
import { ConfigDeliveryController } from './config-delivery.controller';
import { ConfigDeliveryRepository } from './config-delivery.repository';
import { ConfigDeliveryService } from './config-delivery.service';

/**
 * Pages, navigation and value sets for SPA clients (D41, D50). DatabaseModule and CacheModule are
 * global. ConfigDeliveryService is exported for what drops its cached answers (invalidate).
 */
@Module({
  controllers: [ConfigDeliveryController],
  providers: [ConfigDeliveryRepository, ConfigDeliveryService],
  exports: [ConfigDeliveryService],
})
export class ConfigDeliveryModule {}
