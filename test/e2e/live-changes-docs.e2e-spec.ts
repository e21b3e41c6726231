import { startTestApp, TestApp } from '../support/test-app';

/**
 * Swagger UI's "Try it out" waits for an answer to end, and a change stream never does: the
 * operations of both changes routes must say so and name what works instead (docs/live-changes.md).
 */
describe('The OpenAPI description of the live changes routes', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'live-changes-docs' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['/api/v1/{entity_code}/changes', 'streamRecordChanges'],
    ['/api/v1/dataviews/{dvc_code}/changes', 'streamDataviewChanges'],
  ])(
    'should tell a reader of %s that Swagger UI cannot show a stream, and to use curl -N',
    async (path, id) => {
      const doc = (await t.app.inject({ method: 'GET', url: '/api-docs/json' })).json();
      const op = doc.paths[path].get as { operationId: string; description?: string };
      expect(op.operationId).toBe(id);
      expect(op.description).toMatch(/Swagger UI cannot display it/);
      expect(op.description).toMatch(/curl -N .*\/changes/);
      expect(op.description).toMatch(/EventSource and a ticket/);
    },
  );
});
