import { parseArgs, UsageError } from './encrypt-connection';

describe('connection:encrypt arguments', () => {
  it('should take one URL, or - for stdin', () => {
    expect(parseArgs(['postgres://u:p@h/d'])).toEqual({ url: 'postgres://u:p@h/d' });
    expect(parseArgs(['-'])).toEqual({ stdin: true });
    expect(parseArgs(['--help'])).toBe('help');
  });

  it.each([[[]], [['a', 'b']], [['--decrypt']]])('should refuse %p', (argv) => {
    expect(() => parseArgs(argv)).toThrow(UsageError);
  });
});
