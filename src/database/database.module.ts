import { Global, Module } from '@nestjs/common';
import { ConnectionsService } from './connections/connections.service';
import { DatabaseService } from './database.service';

@Global()
@Module({ providers: [DatabaseService, ConnectionsService], exports: [DatabaseService, ConnectionsService] })
export class DatabaseModule {}
