import { mayDownload } from './download-access';

const user = (userId: number, ...permissions: string[]) => ({ userId, permissions });

describe('who may download a stored file (issue 34)', () => {
  it('should serve an export or an import error file to its owner and the job administrators', () => {
    for (const kind of ['export', 'import-errors'] as const) {
      expect(mayDownload({ createdBy: 7, kind }, user(7, 'export:dataview'))).toBe(true);
      expect(mayDownload({ createdBy: 7, kind }, user(8, 'export:dataview', 'create:entity'))).toBe(false);
      expect(mayDownload({ createdBy: 7, kind }, user(8, '*:*'))).toBe(true);
      expect(mayDownload({ createdBy: 7, kind }, user(8, 'admin:system'))).toBe(true);
    }
  });

  it('should serve a tenant export ZIP to holders of admin:system only', () => {
    const zip = { createdBy: 7, kind: 'tenant-export' as const };
    expect(mayDownload(zip, user(7, 'admin:system', '*:*'))).toBe(true);
    expect(mayDownload(zip, user(9, 'admin:system'))).toBe(true);
    expect(mayDownload(zip, user(8, '*:*'))).toBe(false);
    expect(mayDownload(zip, user(7, '*:*'))).toBe(false);
  });

  it('should serve a file without a kind (an uploaded import file, an older file) to its owner only', () => {
    expect(mayDownload({ createdBy: 7 }, user(7))).toBe(true);
    expect(mayDownload({ createdBy: 7 }, user(8, '*:*', 'admin:system'))).toBe(false);
  });
});
