import { AppError } from '../errors/app-error';
import { DEFAULT_JSON_MAX_DEPTH, jsonDepthExceeds, bodyTooDeep } from './json-depth';

const arrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('jsonDepthExceeds', () => {
  it('should count arrays and objects, the outermost as level 1', () => {
    expect(jsonDepthExceeds('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(jsonDepthExceeds('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(jsonDepthExceeds(arrays(64), 64)).toBe(false);
    expect(jsonDepthExceeds(arrays(65), 64)).toBe(true);
  });

  it('should not count brackets inside strings, escaped quotes included', () => {
    const inString = JSON.stringify({ a: `${'['.repeat(100)}"\\${'{'.repeat(100)}` });
    expect(jsonDepthExceeds(inString, 2)).toBe(false);
    expect(jsonDepthExceeds(`["\\\\", ${arrays(3)}]`, 3)).toBe(true);
  });

  it('should measure depth, not the number of containers', () => {
    const wide = JSON.stringify(Array.from({ length: 10_000 }, () => ({ a: [1, { b: 2 }] })));
    expect(jsonDepthExceeds(wide, 4)).toBe(false);
    expect(jsonDepthExceeds(wide, 3)).toBe(true);
  });

  it('should stop at 100,000 levels without recursion', () => {
    expect(jsonDepthExceeds(arrays(100_000), DEFAULT_JSON_MAX_DEPTH)).toBe(true);
    expect(
      jsonDepthExceeds(`${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`, DEFAULT_JSON_MAX_DEPTH),
    ).toBe(true);
  });

  it('should leave scalars and malformed text to the parser', () => {
    expect(jsonDepthExceeds('"text"', 1)).toBe(false);
    expect(jsonDepthExceeds(']]]]]]', 1)).toBe(false);
  });
});

describe('bodyTooDeep', () => {
  it('should be a 400 VALIDATION_ERROR naming the field and the limit', () => {
    const err = bodyTooDeep(64);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('VALIDATION_ERROR');
    expect(err.details).toEqual([{ field: 'body', error: 'is nested more than 64 levels deep' }]);
  });
});
