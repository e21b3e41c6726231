import { ValidationError } from '../common/errors/app-error';
import { DEMO_PAGES, DEMO_VALUE_SETS } from '../database/seed/demo-data';
import {
  answerOf,
  assertConfigCode,
  CONFIG_KINDS,
  ConfigRow,
  configVersion,
  isAnswer,
  VERSION_LENGTH,
} from './config-kinds';

const PAGE_ROW: ConfigRow = {
  id: 1,
  tenantId: null,
  code: 'customer_form',
  name: 'Customer',
  type: 'form',
  objectCode: 'customers',
  body: JSON.stringify(DEMO_PAGES[0].schema),
  addDtls: null,
  lastModified: '2026-01-05T10:00:00.123Z',
};

describe('configVersion', () => {
  const content = { code: 'main', name: 'main', structure: { menu: [] } };

  it('should be a short base64url hash, the same for the same row on every call', () => {
    const version = configVersion('navigation', 1, '2026-01-05T10:00:00.123Z', content);
    expect(version).toMatch(new RegExp(`^[A-Za-z0-9_-]{${VERSION_LENGTH}}$`));
    expect(configVersion('navigation', 1, '2026-01-05T10:00:00.123Z', { ...content })).toBe(version);
  });

  it('should change with the id, the last-modified instant, the content and the kind', () => {
    const base = configVersion('navigation', 1, '2026-01-05T10:00:00.123Z', content);
    const others = [
      configVersion('navigation', 2, '2026-01-05T10:00:00.123Z', content),
      configVersion('navigation', 1, '2026-01-05T10:00:00.124Z', content),
      configVersion('navigation', 1, null, content),
      configVersion('navigation', 1, '2026-01-05T10:00:00.123Z', { ...content, name: 'Main' }),
      configVersion('navigation', 1, '2026-01-05T10:00:00.123Z', { ...content, structure: { menu: [1] } }),
      configVersion('page', 1, '2026-01-05T10:00:00.123Z', content),
    ];
    expect(new Set([base, ...others]).size).toBe(others.length + 1);
  });
});

describe('answerOf', () => {
  it('should answer a page as {code, name, type, objectCode, schema, version} with pgc_schema parsed', () => {
    const answer = answerOf(CONFIG_KINDS.page, PAGE_ROW);
    expect(answer).toEqual({
      code: 'customer_form',
      name: 'Customer',
      type: 'form',
      objectCode: 'customers',
      schema: DEMO_PAGES[0].schema,
      version: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
    });
    expect(Object.keys(answer ?? {})).toEqual(['code', 'name', 'type', 'objectCode', 'schema', 'version']);
  });

  it('should give the same version for the same row and another for a changed row', () => {
    const first = answerOf(CONFIG_KINDS.page, PAGE_ROW)?.version;
    expect(answerOf(CONFIG_KINDS.page, { ...PAGE_ROW })?.version).toBe(first);
    expect(answerOf(CONFIG_KINDS.page, { ...PAGE_ROW, name: 'Client' })?.version).not.toBe(first);
    expect(
      answerOf(CONFIG_KINDS.page, { ...PAGE_ROW, lastModified: '2026-01-05T10:00:01.000Z' })?.version,
    ).not.toBe(first);
    expect(answerOf(CONFIG_KINDS.page, { ...PAGE_ROW, body: '{"sections":[]}' })?.version).not.toBe(first);
  });

  it('should answer a value set as {code, name, values, version}, its description as the name', () => {
    const [tiers] = DEMO_VALUE_SETS;
    const answer = answerOf(CONFIG_KINDS.valueSet, {
      ...PAGE_ROW,
      code: tiers.code,
      name: tiers.description,
      type: null,
      objectCode: null,
      body: JSON.stringify(tiers.values),
    });
    expect(answer).toEqual({
      code: tiers.code,
      name: tiers.description,
      values: tiers.values,
      version: expect.any(String),
    });
  });

  it('should name a navigation by nav_add_dtls.name, else by its code', () => {
    const row = { ...PAGE_ROW, code: 'main', name: null, type: null, objectCode: null, body: '{"menu":[]}' };
    expect(answerOf(CONFIG_KINDS.navigation, row)).toEqual({
      code: 'main',
      name: 'main',
      structure: { menu: [] },
      version: expect.any(String),
    });
    expect(answerOf(CONFIG_KINDS.navigation, { ...row, addDtls: '{"name":"Main menu"}' })?.name).toBe(
      'Main menu',
    );
  });

  it.each([
    ['page', '[1]'],
    ['page', '{"sections": ['],
    ['page', null],
    ['navigation', '"menu"'],
    ['valueSet', '{"code":"x"}'],
    ['valueSet', null],
  ] as const)('should not serve a %s whose JSON column is %s', (kind, body) => {
    expect(answerOf(CONFIG_KINDS[kind], { ...PAGE_ROW, body })).toBeUndefined();
  });
});

describe('isAnswer', () => {
  it('should accept a cached answer of the code and kind, and nothing else', () => {
    const answer = answerOf(CONFIG_KINDS.page, PAGE_ROW);
    expect(isAnswer(CONFIG_KINDS.page, 'customer_form', answer)).toBe(true);
    expect(isAnswer(CONFIG_KINDS.page, 'CUSTOMER_FORM', answer)).toBe(false);
    expect(isAnswer(CONFIG_KINDS.valueSet, 'customer_form', answer)).toBe(false);
    expect(isAnswer(CONFIG_KINDS.page, 'customer_form', { ...answer, version: 1 })).toBe(false);
    expect(isAnswer(CONFIG_KINDS.page, 'customer_form', null)).toBe(false);
  });
});

describe('assertConfigCode', () => {
  it.each(['customer_form', 'a', 'v1.2-beta', 'x'.repeat(100)])('should accept %s', (code) => {
    expect(() => assertConfigCode(code)).not.toThrow();
  });

  it.each(['', 'x'.repeat(101), 'a b', 'a/b', 'é', 'a*', "x' OR '1'='1", 'code\u0000'])(
    'should reject %j with VALIDATION_ERROR naming the code',
    (code) => {
      expect(() => assertConfigCode(code)).toThrow(ValidationError);
      try {
        assertConfigCode(code);
      } catch (err) {
        expect((err as ValidationError).details).toEqual([{ field: 'code', error: expect.any(String) }]);
      }
    },
  );
});
