import { parseArgs, UsageError } from './tenant-header';

describe('tenant-header CLI arguments (D7)', () => {
  it('should take a tenant id and an optional timestamp', () => {
    expect(parseArgs(['7'])).toEqual({ tenantId: '7' });
    expect(parseArgs(['7', '--timestamp'], 1700000000)).toEqual({ tenantId: '7', timestamp: 1700000000 });
    expect(parseArgs(['--timestamp=1600000000', '12'])).toEqual({ tenantId: '12', timestamp: 1600000000 });
    expect(parseArgs(['007'])).toEqual({ tenantId: '7' });
    expect(parseArgs(['--help'])).toBe('help');
  });

  it.each([
    [[]],
    [['abc']],
    [['0']],
    [['-3']],
    [['1.5']],
    [['2147483648']],
    [['1', '2']],
    [['1', '--nope']],
    [['1', '--timestamp=soon']],
  ])('should refuse %p', (argv) => expect(() => parseArgs(argv)).toThrow(UsageError));
});
