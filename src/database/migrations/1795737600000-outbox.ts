import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { OUTBOX_TABLES, toTable } from '../schema';

/** D54: the outbox (app_events, app_event_sequences) and webhooks (app_webhooks, their deliveries). */
export class Outbox1795737600000 implements MigrationInterface {
  name = 'Outbox1795737600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of OUTBOX_TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...OUTBOX_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
