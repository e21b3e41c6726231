import { Injectable } from '@nestjs/common';
import { DatabaseService } from '../database/database.service';
import { BusyError, isBusyError } from '../database/dialect/constraint-errors';
import { RecordsWriteRepository } from '../records/records-write.repository';
import { type WriteTx } from '../records/write-tx';

/** How often a job transaction that hit a deadlock runs again before it gives up. */
const BUSY_RETRIES = 5;

/**
 * Transactions on the configuration database for the job machine: the records core's (so that on
 * SQLite they queue behind its single writer instead of nesting in another write's transaction),
 * at READ COMMITTED where the default is stricter (MariaDB's REPEATABLE READ takes gap locks that
 * make concurrent claims deadlock), run again after a deadlock as the workflow queue's are.
 */
@Injectable()
export class JobTransactions {
  constructor(
    private readonly database: DatabaseService,
    private readonly writes: RecordsWriteRepository,
  ) {}

  async run<T>(work: (tx: WriteTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writes.transaction(this.database.dataSource, work, 'READ COMMITTED');
      } catch (err) {
        if (!isBusyError(err)) throw err;
        if (attempt >= BUSY_RETRIES) throw new BusyError('The job table is busy; retry');
        await new Promise((r) => setTimeout(r, 5 + Math.floor(Math.random() * 20 * attempt)));
      }
    }
  }

  /** Holds named locks (dialect/value-lock.ts) until `tx` ends; none on SQLite, whose writes queue. */
  lock(tx: WriteTx, names: string[]): Promise<void> {
    return this.writes.lockValues(tx, names);
  }
}
