import type { Writable } from 'node:stream';

/**
 * Ends a store's output stream that is being thrown away (a cancelled, failed or aborted export) and
 * resolves once it is closed, so the caller may then delete what it had written. A write still in
 * flight at that moment finishes with ERR_STREAM_DESTROYED, which a file stream then emits as an
 * 'error' (`Cannot call writev after a stream was destroyed`); the output is being discarded, so that
 * error is expected and swallowed here instead of escaping as an uncaught exception.
 */
export async function discardStream(out: Writable): Promise<void> {
  out.on('error', () => undefined);
  if (!out.destroyed) out.destroy();
  if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
}
