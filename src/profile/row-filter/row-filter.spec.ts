import {
  parseRowFilter,
  ROW_FILTER_MAX_DEPTH,
  ROW_FILTER_MAX_LENGTH,
  RowFilter,
  RowFilterError,
  rowFilterFields,
  rowFilterVariables,
} from '.';

function errorOf(source: string): RowFilterError {
  try {
    parseRowFilter(source);
  } catch (err) {
    if (err instanceof RowFilterError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(source)} to be rejected`);
}

const cmp = (field: string, op: string, value: unknown): RowFilter =>
  ({ type: 'compare', field, op, value: { kind: 'literal', value } }) as RowFilter;

describe('parseRowFilter', () => {
  describe('comparisons', () => {
    it.each([
      ['=', '='],
      ['!=', '!='],
      ['<>', '!='],
      ['<', '<'],
      ['<=', '<='],
      ['>', '>'],
      ['>=', '>='],
    ])('should parse the operator %s', (written, op) => {
      expect(parseRowFilter(`amount ${written} 10`)).toEqual(cmp('amount', op, 10));
    });

    it('should parse operators without surrounding spaces', () => {
      expect(parseRowFilter('amount>=10')).toEqual(cmp('amount', '>=', 10));
    });

    it('should parse single-quoted strings with doubled quotes as escapes', () => {
      expect(parseRowFilter("name = 'O''Brien'")).toEqual(cmp('name', '=', "O'Brien"));
      expect(parseRowFilter("name = ''")).toEqual(cmp('name', '=', ''));
    });

    it('should keep other characters inside strings as data', () => {
      expect(parseRowFilter("name = 'x; DROP TABLE t -- /* @foo'")).toEqual(
        cmp('name', '=', 'x; DROP TABLE t -- /* @foo'),
      );
    });

    it('should parse integers, decimals and negative numbers', () => {
      expect(parseRowFilter('a = 42')).toEqual(cmp('a', '=', 42));
      expect(parseRowFilter('a = 4.25')).toEqual(cmp('a', '=', 4.25));
      expect(parseRowFilter('a > -3')).toEqual(cmp('a', '>', -3));
    });

    it('should parse TRUE and FALSE in any case', () => {
      expect(parseRowFilter('active = TRUE')).toEqual(cmp('active', '=', true));
      expect(parseRowFilter('active = false')).toEqual(cmp('active', '=', false));
    });

    it('should parse @tenant_id and @user.<attr>', () => {
      expect(parseRowFilter('tenant_id = @tenant_id')).toEqual({
        type: 'compare',
        field: 'tenant_id',
        op: '=',
        value: { kind: 'tenant' },
      });
      expect(parseRowFilter('owner_id = @user.id')).toEqual({
        type: 'compare',
        field: 'owner_id',
        op: '=',
        value: { kind: 'user', attr: 'id' },
      });
    });

    it('should accept field names with digits and underscores', () => {
      expect(parseRowFilter('_col_2 = 1')).toEqual(cmp('_col_2', '=', 1));
    });
  });

  describe('IN, IS NULL and LIKE', () => {
    it('should parse IN with literals and variables', () => {
      expect(parseRowFilter("status IN ('new', 'paid', @user.status, 3)")).toEqual({
        type: 'in',
        field: 'status',
        negated: false,
        values: [
          { kind: 'literal', value: 'new' },
          { kind: 'literal', value: 'paid' },
          { kind: 'user', attr: 'status' },
          { kind: 'literal', value: 3 },
        ],
      });
    });

    it('should parse NOT IN', () => {
      expect(parseRowFilter("status not in ('cancelled')")).toEqual({
        type: 'in',
        field: 'status',
        negated: true,
        values: [{ kind: 'literal', value: 'cancelled' }],
      });
    });

    it('should parse IS NULL and IS NOT NULL', () => {
      expect(parseRowFilter('deleted_at IS NULL')).toEqual({
        type: 'isNull',
        field: 'deleted_at',
        negated: false,
      });
      expect(parseRowFilter('deleted_at is not null')).toEqual({
        type: 'isNull',
        field: 'deleted_at',
        negated: true,
      });
    });

    it('should parse LIKE and NOT LIKE with a string pattern', () => {
      expect(parseRowFilter("email LIKE '%@acme.test'")).toEqual({
        type: 'like',
        field: 'email',
        negated: false,
        pattern: '%@acme.test',
      });
      expect(parseRowFilter("email NOT LIKE 'a_%'")).toEqual({
        type: 'like',
        field: 'email',
        negated: true,
        pattern: 'a_%',
      });
    });
  });

  describe('boolean structure', () => {
    it('should give AND precedence over OR', () => {
      expect(parseRowFilter('a = 1 OR b = 2 AND c = 3')).toEqual({
        type: 'or',
        operands: [cmp('a', '=', 1), { type: 'and', operands: [cmp('b', '=', 2), cmp('c', '=', 3)] }],
      });
    });

    it('should respect parentheses', () => {
      expect(parseRowFilter('(a = 1 OR b = 2) AND c = 3')).toEqual({
        type: 'and',
        operands: [{ type: 'or', operands: [cmp('a', '=', 1), cmp('b', '=', 2)] }, cmp('c', '=', 3)],
      });
    });

    it('should flatten chains of the same operator', () => {
      expect(parseRowFilter('a = 1 and (b = 2 AND c = 3) And d = 4')).toEqual({
        type: 'and',
        operands: [cmp('a', '=', 1), cmp('b', '=', 2), cmp('c', '=', 3), cmp('d', '=', 4)],
      });
    });

    it('should parse NOT over a condition and over a group', () => {
      expect(parseRowFilter('NOT a = 1')).toEqual({ type: 'not', operand: cmp('a', '=', 1) });
      expect(parseRowFilter('not (a = 1 or b = 2)')).toEqual({
        type: 'not',
        operand: { type: 'or', operands: [cmp('a', '=', 1), cmp('b', '=', 2)] },
      });
    });

    it('should accept redundant parentheses and whitespace', () => {
      expect(parseRowFilter('  ((a = 1))\n\t')).toEqual(cmp('a', '=', 1));
    });
  });

  describe('rejections', () => {
    it.each([
      ['tenant_id = 1 OR 1=1 --', 'comments'],
      ['tenant_id = 1 /* x */', 'comments'],
      ["name = 'x'; DROP TABLE t", 'semicolons'],
      ['@tenant_id) OR (1=1', 'must start with a field name'],
      ['tenant_id = @tenant_id) OR (1=1', "expected AND, OR or the end of the filter but found ')'"],
      ['sleep(5)', 'function calls'],
      ['a = sleep(5)', 'function calls'],
      ['a = lower(name)', 'function calls'],
      ['(SELECT 1)', 'SQL (SELECT)'],
      ['a IN (SELECT id FROM t)', 'SQL (SELECT)'],
      ['a = 1 UNION SELECT 1', 'SQL (UNION)'],
      ['a = @foo', 'unknown variable @foo'],
      ['a = @', 'unknown variable @'],
      ['a = @user', '@user must be followed by .<attribute>'],
      ['a = @user.', '@user must be followed by .<attribute>'],
      ['a = @user.x.y', 'nested attributes'],
      ['a = b', "bare word 'b'"],
      ['a', 'expected a comparison, IN, IS or LIKE but found the end of the filter'],
      ['a = 1 b = 2', "found 'b'"],
      ['1 = 1', 'must start with a field name'],
      ["'x' = name", 'must start with a field name'],
      ['a = NULL', 'use IS NULL'],
      ['a != NULL', 'use IS NOT NULL'],
      ['a IN (NULL)', 'use IS NULL'],
      ['a IN ()', 'expected a literal or variable in the IN list'],
      ['a IN (1,)', 'expected a literal or variable in the IN list'],
      ['a IN 1', "expected '(' after IN"],
      ['a IS 1', 'NULL after IS'],
      ['a NOT = 1', 'IN or LIKE after NOT'],
      ['a LIKE name', 'quoted pattern after LIKE'],
      ["a LIKE 'x\\_y'", "cannot contain '\\'"],
      ["a LIKE '[a-z]%'", "cannot contain '['"],
      ["a = 'open", 'unterminated string'],
      ['a = "x"', 'unexpected character "\\""'],
      ['a = `x`', 'unexpected character'],
      ['t.a = 1', 'unexpected character "."'],
      ['a == 1', "'==' is not an operator"],
      ['a ! 1', "unexpected '!'"],
      ['a = 1e5', 'malformed number'],
      ['a = 0x10', 'malformed number'],
      ['a = 1.', 'malformed number'],
      ['a = 99999999999999999999', 'out of range'],
      ['(a = 1', "expected ')'"],
      ['a = 1)', "expected AND, OR or the end of the filter but found ')'"],
      ['a = 1 AND', 'expected a field name but found the end of the filter'],
      ['a = 1 OR OR b = 2', 'expected a field name but found OR'],
      ['a = 1 && b = 2', 'unexpected character "&"'],
      ['a = 1 || b = 2', 'unexpected character "|"'],
      ['a = 1 AND b BETWEEN 1 AND 2', 'SQL (BETWEEN) is not allowed'],
      ['tenant_id = 1 OR 1=1', 'must start with a field name'],
      ["name = 'x' OR 'a'='a'", 'must start with a field name'],
      ['', 'empty'],
      ['   ', 'empty'],
    ])('should reject %j (%s)', (source, message) => {
      expect(errorOf(source).message).toContain(message);
    });

    it('should report the 0-based position of the problem', () => {
      expect(errorOf("name = 'x'; DROP TABLE t").position).toBe(10);
      expect(errorOf('tenant_id = 1 OR 1=1 --').position).toBe(21);
      expect(errorOf('tenant_id = 1 OR 1=1').position).toBe(17);
      expect(errorOf('a = @foo').position).toBe(4);
      expect(errorOf('a = @foo').message).toBe(
        'Invalid row filter at position 4: unknown variable @foo; only @tenant_id and @user.<attribute> are allowed',
      );
    });

    it('should reject a filter longer than the limit', () => {
      const long = `a = '${'x'.repeat(ROW_FILTER_MAX_LENGTH)}'`;
      expect(errorOf(long).message).toContain(`longer than ${ROW_FILTER_MAX_LENGTH} characters`);
    });

    it('should reject nesting deeper than the limit', () => {
      const ok = `${'('.repeat(ROW_FILTER_MAX_DEPTH)}a = 1${')'.repeat(ROW_FILTER_MAX_DEPTH)}`;
      expect(parseRowFilter(ok)).toEqual(cmp('a', '=', 1));
      const deep = `${'('.repeat(ROW_FILTER_MAX_DEPTH + 1)}a = 1${')'.repeat(ROW_FILTER_MAX_DEPTH + 1)}`;
      expect(errorOf(deep).message).toContain('nested deeper than 20 levels');
      expect(errorOf(`${'NOT '.repeat(ROW_FILTER_MAX_DEPTH + 1)}a = 1`).message).toContain('nested deeper');
    });

    it('should reject more than 100 nodes', () => {
      const many = Array.from({ length: 51 }, (_, i) => `f${i} = ${i}`).join(' OR ');
      expect(errorOf(many).message).toContain('more than 100 nodes');
      const inList = `a IN (${Array.from({ length: 100 }, (_, i) => i).join(',')})`;
      expect(errorOf(inList).message).toContain('more than 100 nodes');
    });

    it('should reject a value that is not a string', () => {
      expect(() => parseRowFilter(42 as unknown as string)).toThrow(RowFilterError);
    });
  });
});

describe('rowFilterFields', () => {
  it('should list every field once in order of appearance', () => {
    const ast = parseRowFilter("a = 1 OR (NOT b IN (1) AND c IS NULL AND a LIKE 'x%' AND d = @tenant_id)");
    expect(rowFilterFields(ast)).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('rowFilterVariables', () => {
  it('should list the tenant and the user attributes the filter uses', () => {
    const ast = parseRowFilter('t = @tenant_id AND (o = @user.id OR NOT r IN (@user.role_id, @user.id))');
    expect(rowFilterVariables(ast)).toEqual({ tenant: true, userAttrs: ['id', 'role_id'] });
    expect(rowFilterVariables(parseRowFilter('a = 1'))).toEqual({ tenant: false, userAttrs: [] });
  });
});
