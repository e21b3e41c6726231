import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { JOB_TABLES, toTable } from '../schema';

/** app_jobs, the background-job machine's table (schema/jobs.ts; leases as D49). */
export class Jobs1795651200000 implements MigrationInterface {
  name = 'Jobs1795651200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of JOB_TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...JOB_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
