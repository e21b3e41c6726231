import type { OpenAPIObject, ParameterObject, SchemaObject } from '@nestjs/swagger';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

function shown(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function withExampleText(description: string | undefined, values: unknown[]): string {
  const text = values.map((v) => `\`${shown(v)}\``).join(', ');
  const line = `${values.length > 1 ? 'Examples' : 'Example'}: ${text}`;
  return description ? `${description}. ${line}` : line;
}

/**
 * Swagger UI's "Try it out" fills a parameter's `example`, its schema's `example` and the first of
 * its `examples` in as the value, and Execute sends it (issue 20: an example If-Match timestamp made
 * every save a 400; an example filter silently filtered the list). No option turns that off, so the
 * document carries parameter examples only where sending them changes nothing: in the description,
 * or as `examples` whose first entry is the empty value (an empty field is not sent; for an object,
 * `{}`). Schema defaults stay: they are what the service uses when the parameter is absent.
 */
export function withoutPrefilledExamples(doc: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(doc.paths)) {
    const lists = [item.parameters, ...METHODS.map((m) => item[m]?.parameters)];
    for (const list of lists)
      for (const p of (list ?? []) as ParameterObject[]) if ('in' in p) clearPrefill(p);
  }
  return doc;
}

function clearPrefill(p: ParameterObject): void {
  const found: unknown[] = [];
  if (p.example !== undefined) found.push(p.example);
  delete p.example;
  const schema = p.schema as SchemaObject | undefined;
  if (schema && !('$ref' in schema) && schema.example !== undefined) {
    found.push(schema.example);
    delete schema.example;
  }
  const examples = p.examples as Record<string, { value?: unknown }> | undefined;
  if (examples) {
    const values = Object.values(examples).map((e) => e.value);
    const firstEmpty = values[0] === '' || values[0] === undefined;
    // An empty first example is not sent; a string parameter can offer the rest from a list.
    if (!(firstEmpty && !p.required && schema?.type === 'string')) {
      delete p.examples;
      found.push(...values.filter((v) => v !== '' && v !== undefined));
    }
  }
  const unique = [...new Set(found.map(shown))];
  if (unique.length > 0 && !(p.description ?? '').includes(unique[0]))
    p.description = withExampleText(p.description, unique);
  // An optional object (the deepObject filters) without examples is filled with a sample built
  // from its schema, one value per property: an empty first example keeps it empty (nothing sent).
  if (!p.required && schema?.type === 'object' && !p.examples)
    p.examples = {
      none: { summary: 'None (nothing sent)', value: {} },
      ...Object.fromEntries(
        found
          .filter((v) => typeof v === 'object' && v !== null)
          .map((v, i) => [`example${i + 1}`, { value: v }]),
      ),
    };
}
