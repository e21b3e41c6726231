import { parseRowFilter, RowFilterError } from '.';
import { compileRowFilter, RowFilterContext } from './compile';

const COLUMNS: Record<string, string> = {
  tenant_id: '"e"."cus_tenant_id"',
  owner_id: '"e"."cus_owner_id"',
  status: '"e"."cus_status"',
  amount: '"e"."cus_amount"',
  active: '"e"."cus_active"',
  email: '"e"."cus_email"',
  deleted_at: '"e"."cus_deleted_at"',
};
const columnOf = (field: string): string | undefined => COLUMNS[field];
const ctx: RowFilterContext = { tenantId: '7', user: { id: 42, email: 'ada@acme.test', admin: true } };

function compile(source: string, context: RowFilterContext = ctx, prefix?: string) {
  return compileRowFilter(parseRowFilter(source), context, columnOf, prefix);
}

describe('compileRowFilter', () => {
  it('should bind @tenant_id as a named parameter', () => {
    expect(compile('tenant_id = @tenant_id')).toEqual({
      sql: '"e"."cus_tenant_id" = :rf0',
      params: { rf0: '7' },
    });
  });

  it('should bind user attributes and literals in order', () => {
    expect(compile("owner_id = @user.id AND (status <> 'closed' OR amount >= 10.5)")).toEqual({
      sql: '("e"."cus_owner_id" = :rf0 AND ("e"."cus_status" <> :rf1 OR "e"."cus_amount" >= :rf2))',
      params: { rf0: 42, rf1: 'closed', rf2: 10.5 },
    });
  });

  it('should emit != as <>, and < <= > as written', () => {
    expect(compile('amount != 1 AND amount < 2 AND amount <= 3 AND amount > 4').sql).toBe(
      '("e"."cus_amount" <> :rf0 AND "e"."cus_amount" < :rf1 AND "e"."cus_amount" <= :rf2 AND "e"."cus_amount" > :rf3)',
    );
  });

  it('should bind TRUE and FALSE as 1 and 0, never as SQL boolean literals', () => {
    const result = compile('active = TRUE OR active = FALSE OR active = @user.admin');
    expect(result.sql).not.toMatch(/TRUE|FALSE/i);
    expect(result.params).toEqual({ rf0: 1, rf1: 0, rf2: 1 });
  });

  it('should compile IN lists to one array parameter TypeORM expands', () => {
    expect(compile("status IN ('new', 'paid', @user.email)")).toEqual({
      sql: '"e"."cus_status" IN (:...rf0)',
      params: { rf0: ['new', 'paid', 'ada@acme.test'] },
    });
    expect(compile('owner_id NOT IN (@user.id, 0)')).toEqual({
      sql: '"e"."cus_owner_id" NOT IN (:...rf0)',
      params: { rf0: [42, 0] },
    });
  });

  it('should compile IS NULL and IS NOT NULL without parameters', () => {
    expect(compile('deleted_at IS NULL AND email IS NOT NULL')).toEqual({
      sql: '("e"."cus_deleted_at" IS NULL AND "e"."cus_email" IS NOT NULL)',
      params: {},
    });
  });

  it('should bind LIKE patterns as parameters', () => {
    expect(compile("email LIKE '%@acme.test' OR email NOT LIKE 'x%'")).toEqual({
      sql: '("e"."cus_email" LIKE :rf0 OR "e"."cus_email" NOT LIKE :rf1)',
      params: { rf0: '%@acme.test', rf1: 'x%' },
    });
  });

  it('should parenthesise the operand of NOT', () => {
    expect(compile('NOT amount = 1').sql).toBe('(NOT ("e"."cus_amount" = :rf0))');
    expect(compile('NOT NOT email IS NULL').sql).toBe('(NOT ((NOT ("e"."cus_email" IS NULL))))');
  });

  it('should parenthesise NOT and nested groups', () => {
    expect(compile('NOT (status = 1 OR status = 2) AND amount > 0').sql).toBe(
      '((NOT ("e"."cus_status" = :rf0 OR "e"."cus_status" = :rf1)) AND "e"."cus_amount" > :rf2)',
    );
  });

  it('should keep quotes and SQL in string literals out of the SQL text', () => {
    const result = compile("email = 'x''; DROP TABLE t; --'");
    expect(result.sql).toBe('"e"."cus_email" = :rf0');
    expect(result.params).toEqual({ rf0: "x'; DROP TABLE t; --" });
  });

  it('should use the given parameter prefix', () => {
    expect(compile('tenant_id = @tenant_id AND status IN (1, 2)', ctx, '__rf')).toEqual({
      sql: '("e"."cus_tenant_id" = :__rf0 AND "e"."cus_status" IN (:...__rf1))',
      params: { __rf0: '7', __rf1: [1, 2] },
    });
  });

  it('should reject a parameter prefix that is not an identifier', () => {
    expect(() => compile('amount = 1', ctx, 'rf; --')).toThrow(RowFilterError);
  });

  it('should bind NULL for a user attribute the user does not have (the condition then matches nothing)', () => {
    expect(compile('owner_id = @user.department')).toEqual({
      sql: '"e"."cus_owner_id" = :rf0',
      params: { rf0: null },
    });
    expect(compile('owner_id IN (@user.department, 1)').params).toEqual({ rf0: [null, 1] });
  });

  it('should not read inherited properties as user attributes', () => {
    expect(compile('owner_id = @user.constructor').params).toEqual({ rf0: null });
  });

  it('should reject a user attribute that is not a scalar', () => {
    const odd = { tenantId: '7', user: { tags: ['a'] as unknown as string } };
    expect(() => compile('status = @user.tags', odd)).toThrow('@user.tags is not a string');
  });

  it('should reject a field the column mapping does not know', () => {
    expect(() => compile('secret = 1')).toThrow(new RowFilterError("unknown field 'secret'"));
    expect(() => compile("amount = 1 OR secret IN ('a')")).toThrow("unknown field 'secret'");
  });

  it('should reject a comparison with NULL even in a hand-built tree', () => {
    const ast = {
      type: 'compare',
      field: 'amount',
      op: '=',
      value: { kind: 'literal', value: null },
    } as const;
    expect(() => compileRowFilter(ast, ctx, columnOf)).toThrow('use IS NULL or IS NOT NULL');
  });

  it('should take columns only from columnOf', () => {
    const result = compileRowFilter(parseRowFilter('amount = 1'), ctx, () => '[e].[amt]');
    expect(result.sql).toBe('[e].[amt] = :rf0');
  });
});
