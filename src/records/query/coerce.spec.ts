import type { FieldDef } from '../../registry/registry.types';
import { coerce } from './coerce';

const field = (type: FieldDef['type']): FieldDef => ({
  name: 'f',
  column: 'x_f',
  type,
  required: false,
  unique: false,
  readOnly: false,
  hidden: false,
});

describe('coerce', () => {
  describe('date', () => {
    const date = field('date');

    it.each([
      '2024-02-29',
      '2000-02-29',
      '2026-02-28',
      '2026-04-30',
      '2026-12-31',
      '1000-01-01',
      '9999-12-31',
    ])('should accept the calendar date %s as given', (s) => {
      expect(coerce(date, s)).toEqual({ value: s });
    });

    // Date.parse accepts the first three (as 2 March, 1 March, 1 May): issue 21 #5.
    it.each([
      '2026-02-30',
      '2026-02-29',
      '2026-04-31',
      '1900-02-29',
      '2026-00-10',
      '2026-13-01',
      '2026-01-00',
      '2026-01-32',
      '0000-00-00',
    ])('should refuse %s, which is no calendar date', (s) => {
      expect(coerce(date, s)).toEqual({ error: 'must be a calendar date (YYYY-MM-DD)' });
    });

    it.each(['0001-01-01', '0999-12-31', '0000-01-01'])(
      'should refuse %s, before the range of every dialect',
      (s) => {
        expect(coerce(date, s)).toEqual({ error: 'must be a date from 1000-01-01 to 9999-12-31' });
      },
    );

    it.each(['2026-2-3', '20260203', '2026-02-03T00:00:00Z', ' 2026-02-03', '+02026-02-03', 'today'])(
      'should refuse %p, which is not YYYY-MM-DD',
      (s) => {
        expect(coerce(date, s)).toEqual({ error: 'must be a date (YYYY-MM-DD)' });
      },
    );
  });
});
