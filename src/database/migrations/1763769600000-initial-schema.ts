import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { TABLES, toTable } from '../schema';

/** Every table of spec §2, the workflow runtime tables, app_audit_logs and the demo entity tables. */
export class InitialSchema1763769600000 implements MigrationInterface {
  name = 'InitialSchema1763769600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
