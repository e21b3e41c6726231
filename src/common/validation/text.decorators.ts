import { ValidateBy, type ValidationArguments } from 'class-validator';
import { emailProblem, wellFormedProblem } from './text-rules';

/** A class-validator decorator from a rule that returns the problem of a string, or undefined. */
function byRule(
  name: string,
  problemOf: (value: string) => string | undefined,
  fallback: string,
): PropertyDecorator {
  return ValidateBy({
    name,
    validator: {
      validate: (value: unknown) => typeof value === 'string' && problemOf(value) === undefined,
      defaultMessage: (args?: ValidationArguments) =>
        (typeof args?.value === 'string' ? problemOf(args.value) : undefined) ?? fallback,
    },
  });
}

/**
 * An e-mail address by the service's one rule ({@link emailProblem}: text rules, then
 * class-validator's isEmail), with the problem as the message. Used by sign-in and sign-up; entity
 * fields of type `email` apply the same rule in the records core.
 */
export const IsEmailAddress = (): PropertyDecorator =>
  byRule('isEmailAddress', emailProblem, 'must be an e-mail address');

/** Well-formed Unicode without NUL ({@link wellFormedProblem}), e.g. a password before it is hashed. */
export const IsWellFormedText = (): PropertyDecorator =>
  byRule('isWellFormedText', wellFormedProblem, 'must be well-formed Unicode text');
