import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { TENANT_USAGE_TABLES, toTable } from '../schema';

/** D58: app_tenant_usage, requests per tenant and hour for the usage route. */
export class TenantUsage1795910400000 implements MigrationInterface {
  name = 'TenantUsage1795910400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of TENANT_USAGE_TABLES) {
      await queryRunner.createTable(toTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...TENANT_USAGE_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
