import { id, int, str, TableDef, text, ts } from './columns';

/**
 * D48: exports kept in the configuration database (EXPORT_STORE=database), so that any instance
 * serves any download. A file is stored as numbered chunks of base64 text (`exf_chunk` 0, 1, …;
 * each at most a few hundred KB, well inside every driver's packet limit), each row repeating the
 * file's metadata. Rows are written with `exf_expires_at` NULL and all set at once when the file is
 * complete, so a half-written export is never served. Never listed in TABLES (its own migration).
 */
export const EXPORT_FILES_TABLE: TableDef = {
  name: 'app_export_files',
  prefix: 'exf',
  columns: [
    id('exf'),
    str('exf_file_id', 64, false),
    int('exf_chunk', false),
    int('exf_tenant_id', false),
    int('exf_created_by', false),
    str('exf_filename', 255, false),
    str('exf_content_type', 128, false),
    text('exf_data'),
    ts('exf_expires_at'),
    ts('exf_created_at', false),
  ],
  indices: [
    { columns: ['exf_file_id', 'exf_chunk'], unique: true },
    { columns: ['exf_expires_at'] },
    { columns: ['exf_created_at'] },
  ],
};

/** The tables of migration ExportFiles1795392000000, which creates exactly these. */
export const EXPORT_TABLES: readonly TableDef[] = [EXPORT_FILES_TABLE];
