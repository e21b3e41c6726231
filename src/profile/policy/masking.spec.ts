import { createHash } from 'node:crypto';
import type { FieldDef } from '../../registry/registry.types';
import { applyProjection, filterableFields, maskValue, visibleFields, writableFieldNames } from './masking';
import { normalisePolicy } from './policy.model';

function field(name: string, extra: Partial<FieldDef> = {}): FieldDef {
  return {
    name,
    column: `cus_${name}`,
    type: 'text',
    required: false,
    unique: false,
    readOnly: false,
    hidden: false,
    ...extra,
  };
}

const FIELDS: FieldDef[] = [
  field('id', { type: 'integer', readOnly: true }),
  field('name'),
  field('email', { type: 'email' }),
  field('phone'),
  field('credit_limit', { type: 'numeric' }),
  field('internal_notes'),
  field('password_hash', { hidden: true }),
];

const RECORD = {
  id: 1,
  name: 'Ada',
  email: 'ada@example.com',
  phone: '+1 555 123 4567',
  credit_limit: 2500,
  internal_notes: 'late payer',
  password_hash: '$argon2id$secret',
};

const policyOf = (policy: unknown) => normalisePolicy({ modeCode: 'FULL', policy });

describe('maskValue', () => {
  it('should hash to sha256: plus the first 16 hex digits', () => {
    const expected = createHash('sha256').update('ada@example.com').digest('hex').slice(0, 16);
    expect(maskValue('hash', 'ada@example.com')).toBe(`sha256:${expected}`);
    expect(maskValue('hash', 'ada@example.com')).toMatch(/^sha256:[0-9a-f]{16}$/);
  });

  it('should hash a number as its text', () => {
    expect(maskValue('hash', 2500)).toBe(maskValue('hash', '2500'));
  });

  it('should mask with one star per character, at most 16', () => {
    expect(maskValue('mask', 'secret')).toBe('******');
    expect(maskValue('mask', 'x'.repeat(40))).toBe('*'.repeat(16));
    expect(maskValue('mask', 12345)).toBe('*****');
    expect(maskValue('mask', '')).toBe('');
    expect(maskValue('mask', 'Zoë')).toBe('***');
  });

  it('should redact to null', () => {
    expect(maskValue('redact', 'anything')).toBeNull();
    expect(maskValue('redact', 0)).toBeNull();
  });

  it('should keep the last 4 characters of a partial value', () => {
    expect(maskValue('partial', '+1 555 123 4567')).toBe('***********4567');
    expect(maskValue('partial', '12345678')).toBe('****5678');
    expect(maskValue('partial', 4111111111111111)).toBe('************1111');
  });

  it('should never show more than half of a short partial value', () => {
    expect(maskValue('partial', '123')).toBe('**3');
    expect(maskValue('partial', '12345')).toBe('***45');
    expect(maskValue('partial', 'x')).toBe('*');
  });

  it('should keep the first character and the domain of a partial e-mail address', () => {
    expect(maskValue('partial', 'john.doe@example.com')).toBe('j***@example.com');
    expect(maskValue('partial', 'a@b.io')).toBe('a***@b.io');
  });

  it.each(['hash', 'mask', 'redact', 'partial'] as const)(
    'should keep null and undefined as null for %s',
    (kind) => {
      expect(maskValue(kind, null)).toBeNull();
      expect(maskValue(kind, undefined)).toBeNull();
    },
  );
});

describe('visibleFields', () => {
  it('should show every field but the hidden ones without a projection', () => {
    expect(visibleFields(policyOf({}), FIELDS)).toEqual([
      'id',
      'name',
      'email',
      'phone',
      'credit_limit',
      'internal_notes',
    ]);
  });

  it('should show only the included fields, in registry order, never hidden ones', () => {
    const policy = policyOf({
      projection: { type: 'include', fields: ['phone', 'id', 'password_hash', 'nope'] },
    });
    expect(visibleFields(policy, FIELDS)).toEqual(['id', 'phone']);
  });

  it('should leave out the excluded fields', () => {
    const policy = policyOf({ projection: { type: 'exclude', excludeFields: ['internal_notes', 'email'] } });
    expect(visibleFields(policy, FIELDS)).toEqual(['id', 'name', 'phone', 'credit_limit']);
  });
});

describe('filterableFields', () => {
  it('should offer neither hidden, excluded nor masked fields for filters and sorting', () => {
    const policy = policyOf({
      projection: { type: 'exclude', excludeFields: ['internal_notes'] },
      masking: { phone: 'partial', email: 'hash' },
    });
    expect(filterableFields(policy, FIELDS)).toEqual(['id', 'name', 'credit_limit']);
  });
});

describe('writableFieldNames', () => {
  it('should allow every field that is neither hidden nor read-only by default', () => {
    expect(writableFieldNames(policyOf({}), FIELDS)).toEqual([
      'name',
      'email',
      'phone',
      'credit_limit',
      'internal_notes',
    ]);
  });

  it('should narrow to writableFields and still refuse read-only and hidden fields', () => {
    const policy = policyOf({ writableFields: ['name', 'id', 'password_hash'] });
    expect(writableFieldNames(policy, FIELDS)).toEqual(['name']);
  });
});

describe('applyProjection', () => {
  it('should drop hidden fields even without a policy projection', () => {
    expect(applyProjection(RECORD, policyOf({}), FIELDS)).toEqual({
      id: 1,
      name: 'Ada',
      email: 'ada@example.com',
      phone: '+1 555 123 4567',
      credit_limit: 2500,
      internal_notes: 'late payer',
    });
  });

  it('should apply an exclude projection and masking (the demo customers profile)', () => {
    const policy = policyOf({
      projection: { type: 'exclude', excludeFields: ['internal_notes'] },
      masking: { phone: 'partial' },
    });
    expect(applyProjection(RECORD, policy, FIELDS)).toEqual({
      id: 1,
      name: 'Ada',
      email: 'ada@example.com',
      phone: '***********4567',
      credit_limit: 2500,
    });
  });

  it('should apply an include projection and every mask kind', () => {
    const policy = policyOf({
      projection: { type: 'include', fields: ['id', 'name', 'email', 'phone', 'credit_limit'] },
      masking: { name: 'mask', email: 'partial', phone: 'redact', credit_limit: 'hash' },
    });
    expect(applyProjection(RECORD, policy, FIELDS)).toEqual({
      id: 1,
      name: '***',
      email: 'a***@example.com',
      phone: null,
      credit_limit: maskValue('hash', '2500'),
    });
  });

  it('should drop keys that are not registry fields unless passed through', () => {
    const record = { ...RECORD, cus_tenant_id: 3, lastModified: '2024-01-01T00:00:00.000Z' };
    const policy = policyOf({ projection: { type: 'include', fields: ['id'] } });
    expect(applyProjection(record, policy, FIELDS)).toEqual({ id: 1 });
    expect(applyProjection(record, policy, FIELDS, { passThrough: ['lastModified'] })).toEqual({
      id: 1,
      lastModified: '2024-01-01T00:00:00.000Z',
    });
  });

  it('should never pass through a registry field the policy keeps from the client', () => {
    const policy = policyOf({ projection: { type: 'include', fields: ['id'] } });
    const result = applyProjection(RECORD, policy, FIELDS, { passThrough: ['password_hash', 'name'] });
    expect(result).toEqual({ id: 1 });
  });

  it('should leave out visible fields the record does not have and keep null values', () => {
    expect(applyProjection({ id: 2, phone: null }, policyOf({ masking: { phone: 'mask' } }), FIELDS)).toEqual(
      {
        id: 2,
        phone: null,
      },
    );
  });
});
