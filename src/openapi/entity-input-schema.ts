import type { SchemaObject } from '@nestjs/swagger';
import type { FieldDef } from '../registry/registry.types';

/**
 * What a create or update body may carry for one field, as the records core accepts it
 * (records/validation.ts → query/coerce.ts): besides the field's own JSON type, a scalar that
 * converts without loss: digits for an integer, a decimal string for a numeric, true/false/0/1 in
 * any of their forms for a boolean, and a number or boolean for a text field (stored as its text).
 * A validating gateway in front of the service must not refuse what the service takes (issue 20).
 */
export function inputFieldSchema(field: FieldDef, read: SchemaObject): SchemaObject {
  const { description, readOnly, nullable, ...own } = read;
  const alternatives = ((): SchemaObject[] | undefined => {
    switch (field.type) {
      case 'text':
        return [{ type: 'number' }, { type: 'boolean' }];
      case 'integer':
        return [{ type: 'string', pattern: '^-?\\d{1,16}$' }];
      case 'numeric':
        return [{ type: 'string', pattern: '^-?\\d+(\\.\\d+)?$' }];
      case 'boolean':
        return [
          { type: 'integer', enum: [0, 1] },
          { type: 'string', enum: ['true', 'false', '1', '0'] },
        ];
      case 'email':
        // Blanks around an address are trimmed before it is checked (and stored lower-cased).
        return [{ type: 'string', pattern: '^\\s+\\S+@\\S+\\s*$|^\\S+@\\S+\\s+$' }];
      case 'date':
      case 'select':
      case 'json':
        return undefined;
    }
  })();
  if (!alternatives) return read;
  return {
    ...(description ? { description } : {}),
    ...(readOnly ? { readOnly } : {}),
    // `nullable` needs a `type` beside it: it goes on the field's own alternative.
    anyOf: [{ ...own, ...(nullable ? { nullable } : {}) }, ...alternatives],
  };
}
