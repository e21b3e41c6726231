import type { IncomingMessage } from 'node:http';
import { requestIdFor } from './request-id';

const req = (value?: string) =>
  ({ headers: value === undefined ? {} : { 'x-request-id': value } }) as IncomingMessage;

describe('requestIdFor', () => {
  it('should keep a sane client id (D19)', () => {
    expect(requestIdFor(req('trace-1.2:3_x'))).toBe('trace-1.2:3_x');
  });

  it.each(['', 'has space', 'x'.repeat(129), '<script>', 'a\nb'])(
    'should replace %p with a generated UUID',
    (value) => {
      expect(requestIdFor(req(value))).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
    },
  );
});
