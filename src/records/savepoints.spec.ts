import type { QueryRunner } from 'typeorm';
import { TransactionLost, WriteTx } from './write-tx';

/** A runner that records its statements; `failOn` makes one of them throw. */
function runner(type: string, failOn?: RegExp): QueryRunner & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    connection: { driver: { options: { type } } },
    query: (sql: string) => {
      log.push(sql);
      return failOn?.test(sql) ? Promise.reject(new Error(`failed: ${sql}`)) : Promise.resolve([]);
    },
  } as unknown as QueryRunner & { log: string[] };
}

describe('withinSavepoint (a bulk write row, D51)', () => {
  it('should release the savepoint of a row that succeeds', async () => {
    const qr = runner('mysql');
    await expect(new WriteTx(qr, qr).withinSavepoint('bulk_row', async () => 7)).resolves.toBe(7);
    expect(qr.log).toEqual(['SAVEPOINT bulk_row', 'RELEASE SAVEPOINT bulk_row']);
  });

  it("should send a succeeded row's RELEASE with the next row's SAVEPOINT on PostgreSQL (one round trip)", async () => {
    const qr = runner('postgres');
    const tx = new WriteTx(qr, qr);
    await tx.withinSavepoint('bulk_row', async () => 1);
    await expect(
      tx.withinSavepoint('bulk_row', () => Promise.reject(new Error('row 2 failed'))),
    ).rejects.toThrow('row 2 failed');
    await tx.withinSavepoint('bulk_row', async () => 3);
    await tx.withinSavepoint('bulk_row', async () => 4);
    expect(qr.log).toEqual([
      'SAVEPOINT bulk_row',
      'RELEASE SAVEPOINT bulk_row; SAVEPOINT bulk_row',
      'ROLLBACK TO SAVEPOINT bulk_row',
      'SAVEPOINT bulk_row',
      'RELEASE SAVEPOINT bulk_row; SAVEPOINT bulk_row',
    ]);
    // The last row's savepoint is left to the COMMIT; another transaction's runner starts clean.
    const next = runner('postgres');
    await new WriteTx(next, next).withinSavepoint('bulk_row', async () => 1);
    expect(next.log).toEqual(['SAVEPOINT bulk_row']);
  });

  it('should undo a failing row alone and throw its error on', async () => {
    const qr = runner('postgres');
    const rowError = new Error('row failed');
    await expect(
      new WriteTx(qr, qr).withinSavepoint('bulk_row', () => Promise.reject(rowError)),
    ).rejects.toBe(rowError);
    expect(qr.log).toEqual(['SAVEPOINT bulk_row', 'ROLLBACK TO SAVEPOINT bulk_row']);
  });

  it("should drop the audit rows a failing row added, and keep the earlier rows' (D29)", async () => {
    const qr = runner('postgres');
    const tx = new WriteTx(qr, qr);
    await tx.withinSavepoint('bulk_row', async () => tx.audit({ aud_record_id: '1' }));
    await expect(
      tx.withinSavepoint('bulk_row', async () => {
        tx.audit({ aud_record_id: '2' });
        throw new Error('row 2 failed');
      }),
    ).rejects.toThrow('row 2 failed');
    await tx.withinSavepoint('bulk_row', async () => tx.audit({ aud_record_id: '3' }));
    expect(tx.audits.map((a) => a.aud_record_id)).toEqual(['1', '3']);
  });

  it("should drop the outbox events a failing row added, and keep the earlier rows' (D54)", async () => {
    const qr = runner('postgres');
    const tx = new WriteTx(qr, qr);
    const event = (recordId: number) =>
      ({ tenantId: '1', action: 'updated', entityCode: 'customers', recordId }) as never;
    await tx.withinSavepoint('bulk_row', async () => tx.emit(event(1)));
    await expect(
      tx.withinSavepoint('bulk_row', async () => {
        tx.emit(event(2));
        throw new Error('row 2 failed');
      }),
    ).rejects.toThrow('row 2 failed');
    expect(tx.events.map((e) => e.recordId)).toEqual([1]);
  });

  it('should take and undo the savepoint on both runners when the entity lives in another database', async () => {
    const data = runner('mysql');
    const config = runner('mssql');
    await expect(
      new WriteTx(data, config).withinSavepoint('bulk_row', () => Promise.reject(new Error('x'))),
    ).rejects.toThrow('x');
    expect(data.log).toEqual(['SAVEPOINT bulk_row', 'ROLLBACK TO SAVEPOINT bulk_row']);
    expect(config.log).toEqual(['SAVE TRANSACTION bulk_row', 'ROLLBACK TRANSACTION bulk_row']);
  });

  it('should say the transaction is lost when the undo fails (a MariaDB deadlock ended it)', async () => {
    const qr = runner('mysql', /^ROLLBACK TO/);
    const deadlock = Object.assign(new Error('Deadlock found'), { errno: 1213 });
    const err: unknown = await new WriteTx(qr, qr)
      .withinSavepoint('bulk_row', () => Promise.reject(deadlock))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionLost);
    expect((err as TransactionLost).failure).toBe(deadlock);
  });
});
