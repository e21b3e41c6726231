import { createApiClient, unwrap, type components, type paths } from './index';

/**
 * The generated types of the envelope answers (issue 20 item 2): documented as bare arrays, the
 * workflow routes made `unwrap()` answer `never` and `.data?.[0]?.code` compile while it was
 * undefined at run time. These lines are checked by `tsc` (npm run typecheck) and by jest.
 */
type IsNever<T> = [T] extends [never] ? true : false;
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

const WORKFLOW = {
  id: 1,
  code: 'customer_onboarding',
  name: 'Customer onboarding',
  description: null,
  status: 'active',
  version: 2,
  scope: 'system',
};

function serving(body: unknown): typeof globalThis.fetch {
  return (() =>
    Promise.resolve(
      new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } }),
    ));
}

describe('generated types of the enveloped answers', () => {
  const envelope = (data: unknown, extras: object = {}) => ({
    success: true,
    data,
    ...extras,
    meta: { timestamp: '2026-11-23T00:00:00.000Z', requestId: 'req-1' },
  });

  it('should type unwrap(GET /api/v1/workflows) as the definitions, not never', async () => {
    const client = createApiClient({ baseUrl: 'http://service.test', fetch: serving(envelope([WORKFLOW])) });
    const workflows = await unwrap(client.api.GET('/api/v1/workflows'));
    const notNever: IsNever<typeof workflows> = false;
    const codeIsString: Equals<(typeof workflows)[number]['code'], string> = true;
    expect([notNever, codeIsString]).toEqual([false, true]);
    expect(workflows[0]?.code).toBe('customer_onboarding');
  });

  it('should type the raw body as the envelope, so .data?.[0] does not compile', async () => {
    const client = createApiClient({ baseUrl: 'http://service.test', fetch: serving(envelope([WORKFLOW])) });
    const answer = await client.api.GET('/api/v1/workflows');
    // @ts-expect-error the body is {success, data, meta}, not the array
    expect(answer.data?.[0]).toBeUndefined();
    expect(answer.data?.data[0]?.code).toBe('customer_onboarding');
  });

  it('should type the instance list with its page keys beside data', async () => {
    const body = envelope([], { count: 0, total: 0, page: 1, pageSize: 25 });
    const client = createApiClient({ baseUrl: 'http://service.test', fetch: serving(body) });
    const answer = await client.api.GET('/api/v1/workflows/instances');
    const total: number | undefined = answer.data?.total;
    expect(total).toBe(0);
    const logs: Equals<
      paths['/api/v1/workflows/instances/{id}/logs']['get']['responses'][200]['content']['application/json']['data'][number]['message'],
      string | null
    > = true;
    expect(logs).toBe(true);
  });

  it('should let a user be created with a password, as the README does', () => {
    const input: components['schemas']['UserInput'] = {
      email_id: 'new.user@acme.test',
      first_name: 'New',
      role_id: 2,
      password: 'a-long-Passw0rd',
    };
    expect(input.password).toBe('a-long-Passw0rd');
  });
});
