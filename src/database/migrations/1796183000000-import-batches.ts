import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { IMPORT_TABLES, toTable } from '../schema';

/** D53: app_import_batches, the idempotency record of each committed batch of an import job. */
export class ImportBatches1796183000000 implements MigrationInterface {
  name = 'ImportBatches1796183000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of IMPORT_TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...IMPORT_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
