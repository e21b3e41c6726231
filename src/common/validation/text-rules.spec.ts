import { emailProblem, storedTextProblem, wellFormedProblem } from './text-rules';

describe('wellFormedProblem', () => {
  it('should refuse NUL and lone surrogates only', () => {
    expect(wellFormedProblem('a\u0000b')).toBe('must not contain NUL characters');
    for (const s of ['\ud800', 'a\udfff', '\udc00\ud800'])
      expect(wellFormedProblem(s)).toBe('must be well-formed Unicode text');
    for (const s of ['😀', 'a\u0007b', 'x\u202ey', '']) expect(wellFormedProblem(s)).toBeUndefined();
  });
});

describe('storedTextProblem', () => {
  it.each(['\u0001', '\u0007', '\u001b[31m', '\u007f', '\u0085', '\u009f', '\u000b', '\u000c'])(
    'should refuse the control character in %j, in single- and multi-line text',
    (s) => {
      expect(storedTextProblem(`a${s}b`, false)).toBe('must not contain control characters');
      expect(storedTextProblem(`a${s}b`, true)).toBe(
        'must not contain control characters (other than tab and line breaks)',
      );
    },
  );

  it('should let multi-line text hold tab, LF and CR, single-line text none of them', () => {
    expect(storedTextProblem('a\tb\r\nc\n', true)).toBeUndefined();
    for (const s of ['a\tb', 'a\nb', 'a\rb'])
      expect(storedTextProblem(s, false)).toBe('must not contain control characters');
  });

  it.each(['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'])(
    'should refuse the bidirectional control %j',
    (c) => {
      expect(storedTextProblem(`invoice${c}fdp.exe`, true)).toMatch(/bidirectional control/);
    },
  );

  it('should accept right-to-left text with its marks, emoji and combining characters', () => {
    for (const s of ['مرحبا\u200f', 'שלום\u200e', '\u061cx', '👩‍💻 café', 'e\u0301'])
      expect(storedTextProblem(s, false)).toBeUndefined();
  });

  it('should report NUL and lone surrogates first', () => {
    expect(storedTextProblem('\u0000', true)).toBe('must not contain NUL characters');
    expect(storedTextProblem('\ud800\u0007', true)).toBe('must be well-formed Unicode text');
  });
});

describe('emailProblem', () => {
  it.each([
    'a@b.co',
    'first.last+tag@sub.example.com',
    'a@xn--bcher-kva.example',
    'ü@exämple.com',
    'demo@acme.test',
  ])('should accept %s', (s) => {
    expect(emailProblem(s)).toBeUndefined();
  });

  it.each([
    'x@b.cd<script>',
    'x@b.c;d',
    'x@-b.com',
    'x@b-.com',
    'x@b.c',
    'x@localhost',
    'x@[1.2.3.4]',
    'x@1.2.3.4',
    'a..b@x.com',
    'Name <a@b.co>',
    'a@b.co\u200b',
    'a\u00ad@b.co',
    'a@b',
    '',
  ])('should refuse %j', (s) => {
    expect(emailProblem(s)).toBe('must be an e-mail address');
  });

  it('should refuse control, bidi and ill-formed text with the text rule, without throwing', () => {
    expect(emailProblem('a@b.co\u0007')).toBe('must not contain control characters');
    expect(emailProblem('a@b.co\n')).toBe('must not contain control characters');
    expect(emailProblem('x@b.cd\u202e')).toMatch(/bidirectional control/);
    expect(emailProblem('\ud800x@b.co')).toBe('must be well-formed Unicode text');
  });
});
