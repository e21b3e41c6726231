import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { dialectOf } from '../dialect';
import {
  TABLES,
  NODE_STATE_UNIQUE,
  QUEUE_INSTANCE_SEQ,
  toTable,
  toTableColumn,
  toTableIndex,
  WORKFLOW_INSTANCE_COLUMNS,
  WORKFLOW_QUEUE_COLUMNS,
  WORKFLOW_STEP_KEYS_TABLE,
} from '../schema';

/**
 * The initial migration's table as a Table object: the statements below need no read of the live
 * schema, so their SQL can be generated offline (workflow-runtime.mssql.spec.ts).
 */
function initialTable(name: string, queryRunner: QueryRunner): Table {
  const def = TABLES.find((t) => t.name === name);
  if (!def) throw new Error(`${name} is not a table of the initial schema`);
  return toTable(def, dialectOf(queryRunner.connection.driver.options.type));
}

/** D49: leases, fencing and idempotency keys for the workflow queue (schema/workflow-runtime.ts). */
export class WorkflowRuntime1795478400000 implements MigrationInterface {
  name = 'WorkflowRuntime1795478400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    const instances = initialTable('wft_instances', queryRunner);
    const queue = initialTable('wft_queue', queryRunner);
    const nodeStates = initialTable('wft_node_states', queryRunner);
    await queryRunner.addColumns(
      instances,
      WORKFLOW_INSTANCE_COLUMNS.map((c) => toTableColumn(c, dialect)),
    );
    await queryRunner.addColumns(
      queue,
      WORKFLOW_QUEUE_COLUMNS.map((c) => toTableColumn(c, dialect)),
    );
    await queryRunner.createIndex(nodeStates, toTableIndex('wft_node_states', NODE_STATE_UNIQUE));
    await queryRunner.createIndex(queue, toTableIndex('wft_queue', QUEUE_INSTANCE_SEQ));
    await queryRunner.createTable(toTable(WORKFLOW_STEP_KEYS_TABLE, dialect), false, true, true);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.dropTable(WORKFLOW_STEP_KEYS_TABLE.name, true, true, true);
    await queryRunner.dropIndex('wft_queue', toTableIndex('wft_queue', QUEUE_INSTANCE_SEQ).name as string);
    await queryRunner.dropIndex(
      'wft_node_states',
      toTableIndex('wft_node_states', NODE_STATE_UNIQUE).name as string,
    );
    for (const c of [...WORKFLOW_QUEUE_COLUMNS].reverse()) await queryRunner.dropColumn('wft_queue', c.name);
    for (const c of [...WORKFLOW_INSTANCE_COLUMNS].reverse())
      await queryRunner.dropColumn('wft_instances', c.name);
  }
}
