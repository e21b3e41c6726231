import { ValidationError as ClassValidatorError, ValidationPipe } from '@nestjs/common';
import { FieldError, ValidationError } from '../errors/app-error';

function flatten(errors: ClassValidatorError[], parent = ''): FieldError[] {
  return errors.flatMap((e) => {
    const field = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((error) => ({ field, error }));
    return [...own, ...flatten(e.children ?? [], field)];
  });
}

/** DTO validation whose failures are the spec's `[{field, error}]` list (spec §7). */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    // One error per field: a missing field is 'required', not also 'must be a string'.
    stopAtFirstError: true,
    exceptionFactory: (errors) => new ValidationError('Validation failed', flatten(errors)),
  });
}
