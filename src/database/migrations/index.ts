import { InitialSchema1763769600000 } from './1763769600000-initial-schema';
import { RevokedTokens1795305600000 } from './1795305600000-revoked-tokens';
import { ExportFiles1795392000000 } from './1795392000000-export-files';
import { WorkflowRuntime1795478400000 } from './1795478400000-workflow-runtime';
import { TenantKeyIndexes1795564800000 } from './1795564800000-tenant-key-indexes';
import { Jobs1795651200000 } from './1795651200000-jobs';
import { Outbox1795737600000 } from './1795737600000-outbox';
import { RecordHistory1795824000000 } from './1795824000000-record-history';
import { TenantUsage1795910400000 } from './1795910400000-tenant-usage';
import { ImportBatches1796183000000 } from './1796183000000-import-batches';
import { JobVisibility1796262000000 } from './1796262000000-job-visibility';

/** Migrations in the order they run. Never edit one that has landed; add a new one. */
export const MIGRATIONS = [
  InitialSchema1763769600000,
  RevokedTokens1795305600000,
  ExportFiles1795392000000,
  WorkflowRuntime1795478400000,
  TenantKeyIndexes1795564800000,
  Jobs1795651200000,
  Outbox1795737600000,
  RecordHistory1795824000000,
  TenantUsage1795910400000,
  ImportBatches1796183000000,
  JobVisibility1796262000000,
];
