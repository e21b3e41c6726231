import { isEmail } from 'class-validator';

/**
 * Rules for text a client sends: what every dialect can hold the same way, and what may be stored.
 * Shared by the records core (entity fields, filters) and the auth DTOs (sign-in, sign-up).
 */

/** A UTF-16 surrogate without its pair: no database column holds it the same way. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
/** C0 and C1 control characters and DEL (Unicode category Cc). */
const CONTROL = /\p{Cc}/u;
/** Cc except tab, line feed and carriage return: what multi-line text may not hold. */
const CONTROL_BUT_LINE_BREAKS = /(?![\t\n\r])\p{Cc}/u;
/**
 * The bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): they make
 * stored text display in another order than it is read ("Trojan Source", spoofed names and file
 * names). The marks U+200E, U+200F and U+061C stay allowed: right-to-left text needs them.
 */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/;
/** Invisible formatting characters (Unicode category Cf: the bidi controls, zero-width joiners, BOM…). */
const FORMAT = /\p{Cf}/u;

/**
 * Why a text value cannot be used at all, or undefined: text must be well-formed Unicode (no lone
 * surrogate) and free of NUL, which PostgreSQL refuses and the others would store, so that every
 * dialect keeps the same text. Filters and search terms are held to this rule.
 */
export function wellFormedProblem(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain NUL characters';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode text';
  return undefined;
}

/**
 * Why a text value may not be stored, or undefined (issue 21 #7): besides {@link wellFormedProblem},
 * no control characters — `multiLine` text (a free-text field) may hold tab, LF and CR, a
 * single-line value (an e-mail address, a code) none — and no bidirectional controls.
 */
export function storedTextProblem(value: string, multiLine: boolean): string | undefined {
  const problem = wellFormedProblem(value);
  if (problem) return problem;
  if ((multiLine ? CONTROL_BUT_LINE_BREAKS : CONTROL).test(value))
    return multiLine
      ? 'must not contain control characters (other than tab and line breaks)'
      : 'must not contain control characters';
  if (BIDI_CONTROL.test(value))
    return 'must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)';
  return undefined;
}

/**
 * Why `value` is no e-mail address, or undefined: the text rules of a single-line value, no
 * invisible formatting characters, then class-validator's `isEmail` (validator.js: a dot-atom or
 * quoted local part of at most 64 octets, a domain of letter-digit-hyphen labels that neither begin
 * nor end with a hyphen and a top-level domain of letters, at most 254 octets in all; no display
 * name, no IP literal). So `x@b.cd<script>`, `x@b.c;d` and `x@-b.com` are refused. The text rules
 * come first: isEmail throws URIError on a lone surrogate (issue 21 #5: a 500 on sign-up).
 */
export function emailProblem(value: string): string | undefined {
  const problem = storedTextProblem(value, false);
  if (problem) return problem;
  if (FORMAT.test(value) || !isEmail(value)) return 'must be an e-mail address';
  return undefined;
}
