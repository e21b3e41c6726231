/**
 * A value already serialized as JSON text (a cached page as the cache holds it). A handler that
 * returns one has it answered as these bytes: the envelope hook (common/http/envelope.hook.ts)
 * puts the text in place of `data` without parsing it, and Fastify does not serialize it again.
 */
export class SerializedJson {
  constructor(readonly text: string) {}
}
