/**
 * The request body serializer of the client's openapi-fetch instances. openapi-fetch's own one
 * JSON-encodes every body but FormData: a CSV string sent as `text/csv` arrived as a JSON string
 * (`"name,email\n…"`), whose one header cell names no field, and a Blob arrived as `{}` (issue 34).
 * Here, what fetch sends as it is — FormData, Blob/File, bytes, streams, URLSearchParams — passes
 * through, and so does a string whose content type is not JSON; everything else is JSON.
 */

/** A body fetch sends as it is (no JSON encoding). */
export function isRawBody(body: unknown): boolean {
  return (
    (typeof FormData !== 'undefined' && body instanceof FormData) ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof URLSearchParams !== 'undefined' && body instanceof URLSearchParams) ||
    (typeof ReadableStream !== 'undefined' && body instanceof ReadableStream) ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body)
  );
}

/** The content type the call set, if any (openapi-fetch passes the merged headers). */
function contentTypeOf(headers: unknown): string | null {
  if (typeof Headers !== 'undefined' && headers instanceof Headers) return headers.get('content-type');
  if (typeof headers === 'object' && headers !== null)
    for (const [name, value] of Object.entries(headers))
      if (name.toLowerCase() === 'content-type' && typeof value === 'string') return value;
  return null;
}

const isJsonType = (type: string): boolean => /^application\/([\w.+-]+\+)?json\b/i.test(type.trim());

export function serializeBody(body: unknown, headers?: unknown): unknown {
  if (isRawBody(body)) return body;
  const type = contentTypeOf(headers);
  if (typeof body === 'string' && type !== null && !isJsonType(type)) return body;
  if (type !== null && /^application\/x-www-form-urlencoded\b/i.test(type))
    return new URLSearchParams(body as Record<string, string>).toString();
  return JSON.stringify(body);
}
