import type { OpenAPIObject } from '@nestjs/swagger';
import { withoutPrefilledExamples } from './parameter-examples';

const doc = (parameters: object[]): OpenAPIObject =>
  ({
    openapi: '3.0.0',
    info: { title: 't', version: '1' },
    paths: { '/x': { get: { parameters, responses: {} } } },
  }) as unknown as OpenAPIObject;

const params = (d: OpenAPIObject): Array<Record<string, any>> =>
  d.paths['/x'].get!.parameters as Array<Record<string, any>>;

describe('withoutPrefilledExamples', () => {
  it('should move example values that Swagger UI would send into the description', () => {
    const d = withoutPrefilledExamples(
      doc([
        {
          name: 'If-Match',
          in: 'header',
          description: 'The token',
          schema: { type: 'string', example: '"2026"' },
        },
        { name: 'filters', in: 'query', schema: { type: 'object' }, example: { tier: 'bronze' } },
        {
          name: 'id',
          in: 'path',
          required: true,
          schema: { type: 'integer' },
          examples: { one: { value: 1 } },
        },
      ]),
    );
    const [ifMatch, filters, id] = params(d);
    expect(ifMatch).toEqual({
      name: 'If-Match',
      in: 'header',
      description: 'The token. Example: `"2026"`',
      schema: { type: 'string' },
    });
    expect(filters.example).toBeUndefined();
    expect(filters.description).toBe('Example: `{"tier":"bronze"}`');
    // Swagger UI fills an object from its schema unless the first example is empty.
    expect(filters.examples).toEqual({
      none: { summary: 'None (nothing sent)', value: {} },
      example1: { value: { tier: 'bronze' } },
    });
    expect(id.examples).toBeUndefined();
    expect(id.description).toBe('Example: `1`');
  });

  it('should keep examples of an optional text parameter whose first one is empty (not sent)', () => {
    const examples = { none: { value: '' }, gold: { value: 'gold' } };
    const d = withoutPrefilledExamples(
      doc([{ name: 'q', in: 'query', schema: { type: 'string' }, examples }]),
    );
    expect(params(d)[0].examples).toEqual(examples);
  });

  it('should keep schema defaults: they are what the service uses anyway', () => {
    const d = withoutPrefilledExamples(
      doc([{ name: 'skip', in: 'query', schema: { type: 'integer', default: 0 } }]),
    );
    expect(params(d)[0]).toEqual({ name: 'skip', in: 'query', schema: { type: 'integer', default: 0 } });
  });
});
