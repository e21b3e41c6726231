import { administersJobs, maySeeJob, publicIdOf } from './job-access';

const user = (userId: number, ...permissions: string[]) => ({ userId, permissions });

describe('who may see a job (issue 34)', () => {
  it('should show a tenant job to its creator and to holders of admin:jobs or admin:system only', () => {
    expect(maySeeJob(7, user(7, 'read:entity'), 'tenant')).toBe(true);
    expect(maySeeJob(7, user(8, 'read:entity', 'create:entity', 'export:dataview'), 'tenant')).toBe(false);
    expect(maySeeJob(7, user(8, 'admin:jobs'), 'tenant')).toBe(true);
    // D9 wildcards: a tenant administrator's *:* (or admin:*) holds admin:jobs.
    expect(maySeeJob(7, user(8, '*:*'), 'tenant')).toBe(true);
    expect(maySeeJob(7, user(8, 'admin:*'), 'tenant')).toBe(true);
    expect(maySeeJob(7, user(8, 'admin:system'), 'tenant')).toBe(true);
    expect(maySeeJob(null, user(8, 'read:entity'), 'tenant')).toBe(false);
  });

  it('should show a system job (a tenant export) to holders of admin:system itself only', () => {
    expect(maySeeJob(7, user(8, 'admin:system'), 'system')).toBe(true);
    for (const permissions of [['*:*'], ['admin:jobs'], ['admin:*'], ['read:entity']])
      expect(maySeeJob(7, user(8, ...permissions), 'system')).toBe(false);
    // Its creator too must still hold admin:system.
    expect(maySeeJob(7, user(7, '*:*'), 'system')).toBe(false);
    expect(administersJobs(user(7, '*:*'), 'system')).toBe(false);
  });

  it('should give a client the public id, never the row key', () => {
    expect(publicIdOf({ id: 5, publicId: 'hV3kq0Zb9mT2xw7LcR1pAg' })).toBe('hV3kq0Zb9mT2xw7LcR1pAg');
    expect(() => publicIdOf({ id: 5, publicId: null })).toThrow('has no public id');
  });
});
