import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { EXPORT_TABLES, toTable } from '../schema';

/** D48: app_export_files, the shared export store (EXPORT_STORE=database). */
export class ExportFiles1795392000000 implements MigrationInterface {
  name = 'ExportFiles1795392000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of EXPORT_TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...EXPORT_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
