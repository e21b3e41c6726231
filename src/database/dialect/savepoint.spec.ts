import { savepointSql } from './savepoint';

describe('savepoints (a bulk write row, D51)', () => {
  it.each(['sqlite', 'postgres', 'mysql'] as const)(
    'should set, undo and release a savepoint on %s',
    (dialect) => {
      expect(savepointSql(dialect, 'bulk_row')).toEqual({
        set: 'SAVEPOINT bulk_row',
        rollback: 'ROLLBACK TO SAVEPOINT bulk_row',
        release: 'RELEASE SAVEPOINT bulk_row',
      });
    },
  );

  // node-sql-parser's TransactSQL grammar has no SAVE TRANSACTION; these are T-SQL's own statements.
  it('should use SAVE TRANSACTION on SQL Server, which has no release', () => {
    const sql = savepointSql('mssql', 'bulk_row');
    expect(sql).toEqual({
      set: 'SAVE TRANSACTION bulk_row',
      rollback: 'ROLLBACK TRANSACTION bulk_row',
      release: null,
    });
  });

  it('should refuse a name that is not a plain identifier', () => {
    expect(() => savepointSql('postgres', 'x; DROP TABLE t')).toThrow('Invalid savepoint name');
  });
});
