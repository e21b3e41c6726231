import { FILTER_OPERATORS } from './record-query';
import { isSearchable, kindOf, operatorAllowed, operatorFits } from './operators';

describe('the one operator table (spec §2.9.1, D30)', () => {
  it('should give entity filters and dataview filters the same answer for every type and operator', () => {
    for (const type of ['text', 'email', 'select', 'integer', 'numeric', 'date', 'boolean'] as const)
      for (const op of FILTER_OPERATORS)
        expect([type, op, operatorAllowed(op, type)]).toEqual([type, op, operatorFits(op, kindOf(type)!)]);
  });

  it('should match text operators on text only: a select holds codes, matched whole', () => {
    expect(operatorAllowed('contains', 'text')).toBe(true);
    expect(operatorAllowed('starts_with', 'email')).toBe(true);
    expect(operatorAllowed('contains', 'select')).toBe(false);
    expect(operatorAllowed('in', 'select')).toBe(true);
  });

  it('should compare numbers and dates, and give JSON fields no operator', () => {
    expect(operatorAllowed('between', 'date')).toBe(true);
    expect(operatorAllowed('greater_than', 'integer')).toBe(true);
    expect(operatorAllowed('greater_than', 'text')).toBe(false);
    expect(FILTER_OPERATORS.some((op) => operatorAllowed(op, 'json'))).toBe(false);
  });

  it('should search text and select values', () => {
    expect(['text', 'email', 'select', 'integer', 'json'].map((t) => isSearchable(t as never))).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
