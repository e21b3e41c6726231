import { FieldError, ValidationError } from '../errors/app-error';

/**
 * The default deepest nesting of request JSON (arrays and objects; the outermost counts as 1).
 * Issue 21 #5: JSON.parse reads any depth, but the recursive code after it does not — a body
 * nested 100,000 deep made JSON.stringify throw RangeError (500) when a workflow stored its input.
 * 64 is far beyond what any body, configuration or JSON field of the service needs (a dataview
 * configuration is about 6 deep) and far below the ~8,000 at which JSON.stringify fails.
 */
export const DEFAULT_JSON_MAX_DEPTH = 64;

const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text nests arrays and objects more than `maxDepth` deep. A scan of the text
 * (brackets outside strings), without recursion and before anything is parsed: it costs one pass
 * over the characters and stops at the first level too deep. Malformed text is left to the parser.
 */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  // Fewer characters than maxDepth + 1 opening brackets cannot exceed it.
  if (text.length <= maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** The problem of `field` (`body`, or a query parameter holding JSON) nested too deeply. */
export function depthProblem(field: string, maxDepth: number): FieldError {
  return { field, error: `is nested more than ${maxDepth} levels deep` };
}

/** 400 VALIDATION_ERROR naming the body. */
export function bodyTooDeep(maxDepth: number): ValidationError {
  return new ValidationError('Body is nested too deeply', [depthProblem('body', maxDepth)]);
}
