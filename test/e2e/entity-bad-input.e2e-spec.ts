import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { RegistryService } from '../../src/registry/registry.service';
import type { EntityInfo } from '../../src/registry/registry.types';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, unknown>;

/**
 * Hostile input on every writable field of the demo entities and on every list parameter,
 * generated from the registry: each answer must be a success or the error envelope with a 4xx code
 * (never a 500, a stack trace or a raw database error), and a refused write must change nothing
 * (row counts are compared with the number of accepted creates). `roles` is left out: its READ
 * profile refuses every write before a field is looked at.
 */
const HOSTILE: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  ' ',
  '12abc',
  '1e5',
  'NaN',
  'Infinity',
  '2026-13-45',
  "x' OR '1'='1",
  "'; DROP TABLE demo_customers; --",
  '<script>alert(1)</script>',
  '\u0000',
  'a\u0000b',
  '😀'.repeat(30),
  'x'.repeat(5000),
  [],
  [1, 2],
  {},
  { $gt: '' },
  { __proto__: { polluted: true } },
];

/** A valid create body per entity; the hostile value replaces one field at a time. */
const BASE: Record<string, (n: number) => Json> = {
  customers: (n) => ({
    name: `Bad Input ${n}`,
    email: `bad-input-${n}@acme.example`,
    tier: 'gold',
    credit_limit: 10,
  }),
  orders: () => ({ customer_id: 1, amount: 5, status: 'new' }),
  users: (n) => ({ email_id: `bad-input-${n}@acme.test`, first_name: 'B', role_id: 1 }),
};

const TABLES: Record<string, string> = {
  customers: 'demo_customers',
  orders: 'demo_orders',
  users: 'app_users',
};

describe('Hostile input on entity routes (generated from the registry)', () => {
  let t: TestApp;
  let ds: DataSource;
  let headers: Record<string, string>;
  let serial = 0;
  let problems: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ label: 'bad_input' });
    ds = t.app.get(DatabaseService).dataSource;
    // The system admin may write every demo entity (users and roles are maintainedBy system).
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'root@acme.test')).token);
  });

  beforeEach(() => {
    problems = [];
  });

  afterAll(async () => {
    await t?.close();
  });

  const count = async (table: string) =>
    Number((await ds.query<Array<{ n: unknown }>>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);

  /** Records what is wrong with an answer: a 5xx, a body that is not the envelope, a leaked error. */
  function check(what: string, status: number, body: string): void {
    let json: Json | undefined;
    try {
      json = JSON.parse(body) as Json;
    } catch {
      problems.push(`${what}: ${status} with a body that is not JSON`);
      return;
    }
    if (status >= 500) problems.push(`${what}: ${status} ${body.slice(0, 200)}`);
    else if (status >= 400) {
      const error = json.error as Json | undefined;
      if (json.success !== false || typeof error?.code !== 'string' || typeof json.message !== 'string')
        problems.push(`${what}: ${status} without the error envelope`);
      if (/QueryFailedError|SQLITE_|ER_[A-Z_]+|syntax error|at .*\.js:\d+/.test(body))
        problems.push(`${what}: ${status} leaks a database error or stack: ${body.slice(0, 200)}`);
    } else if (json.success !== true) problems.push(`${what}: ${status} without success: true`);
  }

  it.each(Object.keys(BASE))(
    'should answer hostile field values of %s with 2xx or a 4xx envelope',
    async (code) => {
      const entity = (await t.app.get(RegistryService).resolve(TENANT.acme, code)) as EntityInfo;
      const writable = entity.fields.filter((f) => !f.readOnly && !f.hidden).map((f) => f.name);
      expect(writable.length).toBeGreaterThan(1);
      const before = await count(TABLES[code]);
      let created = 0;
      const sample = (
        await t.app.inject({ method: 'POST', url: `/api/v1/${code}`, headers, payload: BASE[code](++serial) })
      ).json<{ data: Json }>().data;
      created++;
      for (const field of writable) {
        for (const value of HOSTILE) {
          const payload = { ...BASE[code](++serial), [field]: value };
          const post = await t.app.inject({ method: 'POST', url: `/api/v1/${code}`, headers, payload });
          check(`POST ${code} ${field}=${JSON.stringify(value)?.slice(0, 40)}`, post.statusCode, post.body);
          if (post.statusCode === 201) created++;
          const put = await t.app.inject({
            method: 'PUT',
            url: `/api/v1/${code}/${String(sample.id)}`,
            headers,
            payload: { [field]: value, lastModified: sample.lastModified },
          });
          check(`PUT ${code} ${field}=${JSON.stringify(value)?.slice(0, 40)}`, put.statusCode, put.body);
          if (put.statusCode === 200) sample.lastModified = put.json<{ data: Json }>().data.lastModified;
        }
      }
      expect(problems).toEqual([]);
      // A refused create inserted nothing.
      expect(await count(TABLES[code])).toBe(before + created);
    },
  );

  it('should store and return text outside the BMP, NUL aside, exactly (utf8mb4 on MariaDB)', async () => {
    const name = `Zoë 😀 ${'𝔘'.repeat(3)} 中文`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers,
      payload: { ...BASE.customers(++serial), name },
    });
    expect(res.statusCode).toBe(201);
    const id = res.json<{ data: Json }>().data.id;
    const back = await t.app.inject({ method: 'GET', url: `/api/v1/customers/${String(id)}`, headers });
    expect(back.json<{ data: Json }>().data.name).toBe(name);
  });

  it('should answer hostile bodies, ids and list parameters with a 4xx envelope', async () => {
    const bodies: unknown[] = [[], 'text', 42, null, [{ name: 'x' }], { name: { nested: { deeper: [1] } } }];
    for (const body of bodies) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/customers',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
      check(`POST body ${JSON.stringify(body)}`, res.statusCode, res.body);
      expect(res.statusCode).toBe(400);
    }
    const broken = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"name": "x",',
    });
    check('POST malformed JSON', broken.statusCode, broken.body);
    expect(broken.statusCode).toBe(400);

    const ids = ['0', '-1', '1.5', 'abc', '99999999999999999999', "1' OR '1'='1", '%00', '1e3'];
    for (const id of ids) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const res = await t.app.inject({
          method,
          url: `/api/v1/customers/${encodeURIComponent(id)}`,
          headers,
          ...(method === 'PUT' ? { payload: { name: 'x', lastModified: new Date().toISOString() } } : {}),
        });
        check(`${method} id ${id}`, res.statusCode, res.body);
        expect(res.statusCode).toBeGreaterThanOrEqual(400);
      }
    }

    const query = [
      'limit=-1',
      'limit=abc',
      'limit=1e309',
      'limit=1&limit=2',
      'skip=-5',
      'skip=99999999999999999999',
      'sortBy=internal_notes',
      'sortBy=name;DROP TABLE x',
      'sortOrder=sideways',
      'filters[email]=%27%20OR%201=1--',
      'filters[credit_limit]=abc',
      'filters[nope]=1',
      'filters=1',
      'filters[name][$ne]=x',
      'unknown=1',
      `filters[name]=${'x'.repeat(5000)}`,
    ];
    for (const q of query) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/customers?${q}`, headers });
      check(`GET ?${q.slice(0, 40)}`, res.statusCode, res.body);
    }
    expect(problems).toEqual([]);
  });

  /** D45: from the largest INT to 10^10, and negatives, on every entity that has an integer key. */
  const OUT_OF_RANGE = [
    '2147483647',
    '2147483648',
    '4294967295',
    '4294967296',
    '9999999999',
    '10000000000',
    '-1',
    '-2147483648',
    '-2147483649',
    '-10000000000',
  ];

  it('should answer 404 (never 500) for ids from 2^31 - 1 to 10^10 and negatives', async () => {
    for (const entity of ['customers', 'orders', 'users']) {
      for (const id of OUT_OF_RANGE) {
        for (const method of ['GET', 'PUT', 'DELETE'] as const) {
          const res = await t.app.inject({
            method,
            url: `/api/v1/${entity}/${id}`,
            headers,
            ...(method === 'PUT' ? { payload: { lastModified: new Date().toISOString() } } : {}),
          });
          check(`${method} ${entity}/${id}`, res.statusCode, res.body);
          // PUT checks its body first (400 names no field); the users profile forbids every delete
          // (403, before any id is read); every other answer is a 404.
          const expected =
            method === 'PUT' ? [400, 404] : method === 'DELETE' && entity === 'users' ? [403] : [404];
          expect({ method, entity, id, status: expected.includes(res.statusCode) }).toEqual({
            method,
            entity,
            id,
            status: true,
          });
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('should answer integer filter values from 2^31 - 1 to 10^10 and negatives with 200 or 400 naming the field', async () => {
    const integerFilters = [
      ['orders', 'customer_id'],
      ['customers', 'id'],
      ['users', 'role_id'],
      ['users', 'status'],
    ];
    for (const [entity, field] of integerFilters) {
      for (const value of OUT_OF_RANGE) {
        const res = await t.app.inject({
          method: 'GET',
          url: `/api/v1/${entity}?filters%5B${field}%5D=${value}`,
          headers,
        });
        check(`GET ${entity}?filters[${field}]=${value}`, res.statusCode, res.body);
        if (res.statusCode !== 200) {
          expect(res.statusCode).toBe(400);
          expect(res.json<{ error: { details: Json[] } }>().error.details).toEqual([
            { field: `filters[${field}]`, error: expect.any(String) },
          ]);
        }
        const n = Number(value);
        if (field !== 'status' && (n > 2147483647 || n < -2147483648)) expect(res.statusCode).toBe(400);
      }
    }
    expect(problems).toEqual([]);
  });
});

/** Issue 9 finding 7: numbers in decimal notation and in range, well-formed text, capped details. */
describe('Strict input (numbers, text, error size)', () => {
  let t: TestApp;
  let headers: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ label: 'strict_input' });
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    await t?.close();
  });

  const postRaw = (url: string, body: string) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: body,
    });
  const detailsOf = (res: { json(): unknown }) =>
    (res.json() as { error: { details: Array<{ field: string; error: string }> } }).error.details;

  it.each([
    ['"0x10"', 'must be a number'],
    ['"1e5"', 'must be a number'],
    ['" 12"', 'must be a number'],
    ['"Infinity"', 'must be a number'],
    ['1e308', 'is out of range'],
    ['12345678901', 'is out of range'],
    ['12.345', 'must have at most 2 decimal places'],
    ['0.0000001', 'must have at most 2 decimal places'],
  ])('should refuse credit_limit %s (%s) ', async (value, error) => {
    const res = await postRaw(
      '/api/v1/customers',
      `{"name":"Strict","email":"strict-${Date.now()}@acme.example","credit_limit":${value}}`,
    );
    expect(res.statusCode).toBe(400);
    expect(detailsOf(res)).toEqual([{ field: 'credit_limit', error: expect.stringContaining(error) }]);
  });

  it('should accept a decimal in range with the column’s scale', async () => {
    const res = await postRaw(
      '/api/v1/customers',
      `{"name":"Strict","email":"strict-ok-${Date.now()}@acme.example","credit_limit":9999999999.99}`,
    );
    expect(res.statusCode).toBe(201);
    expect(res.json<{ data: { credit_limit: number } }>().data.credit_limit).toBe(9999999999.99);
  });

  it.each(['9007199254740993', '9007199254740992', '1.5', '"0x10"', '"1e3"'])(
    'should refuse the integer %s rather than change it',
    async (value) => {
      const res = await postRaw('/api/v1/orders', `{"customer_id":${value},"amount":1}`);
      expect(res.statusCode).toBe(400);
      expect(detailsOf(res)).toEqual([{ field: 'customer_id', error: expect.any(String) }]);
    },
  );

  it.each([
    ['a lone high surrogate', '"x\\ud800y"'],
    ['a lone low surrogate', '"\\udc00"'],
    ['a NUL character', '"a\\u0000b"'],
  ])('should refuse text with %s', async (_what, value) => {
    const res = await postRaw(
      '/api/v1/customers',
      `{"name":${value},"email":"strict-text-${Date.now()}@acme.example"}`,
    );
    expect(res.statusCode).toBe(400);
    expect(detailsOf(res)).toEqual([{ field: 'name', error: expect.stringMatching(/Unicode|NUL/) }]);
    // A URL cannot carry a lone surrogate (it is not UTF-8); a NUL it can.
    if (value.includes('u0000')) {
      const filtered = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers?filters%5Bname%5D=a%00b',
        headers,
      });
      expect(filtered.statusCode).toBe(400);
    }
  });

  it('should refuse a decimal filter in another notation', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?filters%5Bcredit_limit%5D=0x10',
      headers,
    });
    expect(res.statusCode).toBe(400);
    expect(detailsOf(res)).toEqual([{ field: 'filters[credit_limit]', error: 'must be a number' }]);
  });

  it('should list at most 50 problems and count the rest', async () => {
    const body: Record<string, number> = {};
    for (let i = 0; i < 30_000; i++) body[`u${i}`] = i;
    const res = await postRaw('/api/v1/customers', JSON.stringify(body));
    expect(res.statusCode).toBe(400);
    const details = detailsOf(res);
    expect(details).toHaveLength(51);
    expect(details[50]).toEqual({
      field: '*',
      error: expect.stringMatching(/^\d+ more problems not listed$/),
    });
    expect(Number(/^(\d+)/.exec(details[50].error)?.[1])).toBe(30_000 + 2 - 50);
    expect(res.body.length).toBeLessThan(10_000);
  });
});
