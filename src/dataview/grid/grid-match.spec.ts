import { conditionMatches, rowMatches } from './grid-match';

describe('grid-match (live changes of a dataview, D55)', () => {
  const row = { id: 1, status: 'paid', amount: 120.5, note: null, name: 'Acme Corp' };

  it('should match each operator as the SQL filter does, nulls never comparing', () => {
    const ok = (operator: any, value?: unknown, field = 'status') => conditionMatches(row, { field, operator, value });
    expect(ok('equals', 'paid')).toBe(true);
    expect(ok('not_equals', 'cancelled')).toBe(true);
    expect(ok('not_equals', 'paid')).toBe(false);
    expect(ok('not_equals', 'x', 'note')).toBe(false);
    expect(ok('in', ['new', 'paid'])).toBe(true);
    expect(ok('not_in', ['new', 'paid'])).toBe(false);
    expect(ok('contains', 'CORP', 'name')).toBe(true);
    expect(ok('starts_with', 'acme', 'name')).toBe(true);
    expect(ok('ends_with', 'acme', 'name')).toBe(false);
    expect(ok('greater_than', 100, 'amount')).toBe(true);
    expect(ok('less_than', '100', 'amount')).toBe(false);
    expect(ok('between', [100, 200], 'amount')).toBe(true);
    expect(ok('is_null', undefined, 'note')).toBe(true);
    expect(ok('is_not_null', undefined, 'note')).toBe(false);
    expect(ok('equals', 'x', 'missing')).toBe(false);
  });

  it('should need every condition', () => {
    expect(rowMatches(row, [])).toBe(true);
    expect(
      rowMatches(row, [
        { field: 'status', operator: 'not_equals', value: 'cancelled' },
        { field: 'amount', operator: 'greater_than', value: 500 },
      ]),
    ).toBe(false);
  });
});
