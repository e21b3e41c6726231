import { ValidationError } from '../../common/errors/app-error';
import { gridConfigOf } from './grid-config';
import { parseGridRequest } from './grid-request';

function problems(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}

describe('dataview data request parameters', () => {
  it('should read every parameter', () => {
    expect(
      parseGridRequest({
        page: '2',
        pageSize: '10',
        filters: JSON.stringify([
          { filterId: 'f', fieldCode: 'tier', operator: 'in', value: ['gold'] },
          { fieldCode: 'name', operator: 'is_null' },
        ]),
        sort: JSON.stringify([{ fieldCode: 'name', direction: 'DESC' }, { fieldCode: 'id' }]),
        search: ' ann ',
        cursor: 'abc.def',
        groupBy: 'tier',
        groupKey: 'gold',
      }),
    ).toEqual({
      page: 2,
      pageSize: 10,
      filters: [
        { index: 0, fieldCode: 'tier', operator: 'in', value: ['gold'] },
        { index: 1, fieldCode: 'name', operator: 'is_null' },
      ],
      sort: [
        { index: 0, fieldCode: 'name', direction: 'desc' },
        { index: 1, fieldCode: 'id', direction: 'asc' },
      ],
      search: 'ann',
      cursor: 'abc.def',
      groupBy: 'tier',
      groupKey: { value: 'gold' },
    });
    expect(parseGridRequest(undefined)).toEqual({
      page: undefined,
      pageSize: undefined,
      filters: [],
      sort: undefined,
    });
  });

  it('should read a group key as a JSON scalar when it is one, else as text', () => {
    const key = (groupKey: string) => parseGridRequest({ groupBy: 'x', groupKey }).groupKey;
    expect([key('null'), key('5'), key('"null"'), key('gold'), key('')]).toEqual([
      { value: null },
      { value: 5 },
      { value: 'null' },
      { value: 'gold' },
      { value: '' },
    ]);
    expect(problems(() => parseGridRequest({ groupBy: 'x', groupKey: '[1]' }))).toEqual([
      { field: 'groupKey', error: 'must be a single value' },
    ]);
  });

  it('should name every malformed parameter', () => {
    expect(
      problems(() =>
        parseGridRequest({
          page: '-1',
          pageSize: '0',
          limit: '5',
          search: ['a', 'b'],
          filters: JSON.stringify([
            'x',
            { fieldCode: 'a', operator: 'like', value: 1 },
            { fieldCode: 'a', operator: 'is_null', value: 1 },
            { fieldCode: 'a', operator: 'equals' },
            { field: 'a', operator: 'equals', value: 1 },
          ]),
          sort: '{"fieldCode":"a"}',
        }),
      ),
    ).toEqual([
      { field: 'limit', error: 'unknown query parameter' },
      { field: 'page', error: 'must be an integer from 0 to 1000000000' },
      { field: 'pageSize', error: 'must be an integer from 1 to 1000000000' },
      { field: 'filters[0]', error: 'must be an object {fieldCode, operator, value}' },
      { field: 'filters[1].operator', error: expect.stringContaining('must be one of equals, not_equals') },
      { field: 'filters[2].value', error: 'must be absent for is_null' },
      { field: 'filters[3].value', error: 'is required' },
      { field: 'filters[4]', error: 'unknown key field' },
      { field: 'filters[4].fieldCode', error: 'is required' },
      { field: 'sort', error: 'must be a JSON array' },
      { field: 'search', error: 'must be given once' },
    ]);
    expect(
      problems(() => parseGridRequest({ filters: 'not json', sort: '[{"fieldCode":"a","direction":"up"}]' })),
    ).toEqual([
      { field: 'filters', error: 'must be a JSON array' },
      { field: 'sort[0].direction', error: 'must be asc or desc' },
    ]);
    expect(problems(() => parseGridRequest({ filters: JSON.stringify(Array(51).fill({})) }))).toEqual([
      { field: 'filters', error: 'must hold at most 50 filters' },
    ]);
  });
});

describe('dataview grid configuration', () => {
  it('should read the defaults of a sparse configuration', () => {
    expect(gridConfigOf({ columns: [{ fieldCode: 'name' }, { fieldCode: null }] })).toEqual({
      columns: [
        {
          index: 0,
          fieldCode: 'name',
          columnType: null,
          isFilterable: false,
          isSortable: false,
          searchable: false,
          aggregateFunction: null,
        },
      ],
      defaultFilters: [],
      defaultSort: [],
      filtering: true,
      sorting: true,
      multiSort: true,
      pageSize: 25,
      pagination: 'offset',
      maxRows: 10000,
      groupable: [],
    });
    expect(gridConfigOf({ display: { paginationType: 'virtual' } }).pagination).toBe('offset');
    expect(gridConfigOf({ display: { paginationType: 'cursor' } }).pagination).toBe('cursor');
  });

  it('should name the keys it cannot read', () => {
    expect(
      problems(() =>
        gridConfigOf({
          columns: [1, { fieldCode: 5 }, { fieldCode: 'a', isSortable: 'yes', aggregateFunction: 3 }],
          display: { pageSize: 0 },
          source: 'x',
          filters: { defaultFilters: {} },
          grouping: { groupableColumns: [1] },
        }),
      ),
    ).toEqual([
      { field: 'config.columns[0]', error: 'must be an object' },
      { field: 'config.columns[1].fieldCode', error: 'must be a field name or null' },
      { field: 'config.columns[2].aggregateFunction', error: 'must be a text' },
      { field: 'config.columns[2].isSortable', error: 'must be true or false' },
      { field: 'config.filters.defaultFilters', error: 'must be an array' },
      { field: 'config.grouping.groupableColumns', error: 'must be an array of field names' },
      { field: 'config.source', error: 'must be an object' },
      { field: 'config.display.pageSize', error: 'must be a positive integer' },
    ]);
  });
});
