import { Inject } from '@nestjs/common';
import { APP_CONFIG } from './config.module';

/** Injects the validated AppConfig. */
export const InjectConfig = (): ParameterDecorator => Inject(APP_CONFIG);
