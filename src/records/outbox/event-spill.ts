import { JsonLinesSpill } from '../../common/spill/json-lines-spill';
import type { PendingEvent } from './outbox.types';

/**
 * The pending outbox events of one long transaction (an all-or-none import of many batches, D53),
 * moved out of memory between its batches and read back in order when the transaction appends its
 * events just before the commit — so the tenant's sequence is still taken last, as for every other
 * write (D54). One tenant per spill.
 */
export class EventSpill extends JsonLinesSpill<PendingEvent> {
  constructor(readonly tenantId: string) {
    super('outbox-spill-');
  }
}
