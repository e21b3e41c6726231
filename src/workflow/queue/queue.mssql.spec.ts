import type { QueryRunner } from 'typeorm';
import { assertParsesAsTsql } from '../../../test/support/tsql';
import type { DatabaseService } from '../../database/database.service';
import { skipLockedClaim } from '../../database/dialect/claim';
import { mssqlDataSource } from '../../database/mssql-sql';
import { InstancesRepository } from '../instance/instances.repository';
import { QueueRepository } from './queue.repository';

/**
 * The workflow queue's statements for SQL Server (D49), built by the real repositories on a
 * DataSource that is never connected, printed (snapshot) and parsed as T-SQL: the claim reads past
 * rows other workers hold and locks what it reads; the instance lock of a fenced commit.
 */
describe('Workflow queue SQL on SQL Server (no server)', () => {
  const ds = mssqlDataSource();
  const database = { dataSource: ds } as unknown as DatabaseService;
  const qr = { connection: ds } as unknown as QueryRunner;
  const now = Date.UTC(2026, 10, 23, 12, 0, 0);

  it('claims due or expired rows with WITH (UPDLOCK, READPAST, ROWLOCK), oldest first, as valid T-SQL', () => {
    const claim = skipLockedClaim(qr, new QueueRepository(database).claimCandidates(qr, now, 4));
    expect(claim.sql).toMatchSnapshot();
    expect(claim.sql).toContain('FROM "wft_queue" "q" WITH (UPDLOCK, READPAST, ROWLOCK) WHERE');
    expect(claim.sql).toMatch(
      /ORDER BY q\.wfq_available_at ASC, q\.wfq_id ASC OFFSET 0 ROWS FETCH NEXT 4 ROWS ONLY$/,
    );
    expect(claim.params).toEqual(['2026-11-23 12:00:00.000']);
    assertParsesAsTsql(claim.sql);
  });

  it('locks the instance row of a fenced commit with UPDLOCK, scoped to the tenant, as valid T-SQL', () => {
    const [sql, params] = new InstancesRepository(database).lockQuery(qr, '1', 7).getQueryAndParameters();
    expect(sql).toMatchSnapshot();
    expect(sql).toMatch(
      /FROM "wft_instances" "i" WITH \(UPDLOCK, ROWLOCK\) WHERE i\.wfi_id = @0 AND i\.wfi_tenant_id = @1$/,
    );
    expect(params).toEqual([7, 1]);
    assertParsesAsTsql(sql);
  });
});
