import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { guardedLookup, SsrfRefusedError, urlProblem, type SsrfPolicy } from './ssrf';

/** Bytes of a receiver's answer kept in the delivery log. */
export const RESPONSE_LOG_BYTES = 1024;

export interface SendResult {
  /** The HTTP status, or null when there was none (refused, unreachable, timed out). */
  status: number | null;
  error: string | null;
  /** The start of the answer's body (at most RESPONSE_LOG_BYTES, then `…`). */
  response: string | null;
  ms: number;
}

/**
 * One POST of a delivery: JSON body and the Standard Webhooks headers; the address connected to
 * checked against the SSRF policy (guardedLookup; an IP literal by urlProblem); no redirect is
 * followed (a 3xx is a failure like any answer but 2xx); the whole attempt bounded by `timeoutMs`;
 * only the first RESPONSE_LOG_BYTES of the answer read and kept.
 */
export function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
  policy: SsrfPolicy,
): Promise<SendResult> {
  const started = Date.now();
  const done = (status: number | null, error: string | null, response: string | null): SendResult => ({
    status,
    error,
    response,
    ms: Date.now() - started,
  });
  const problem = urlProblem(policy, url);
  if (problem) return Promise.resolve(done(null, `refused: ${problem}`, null));
  const target = new URL(url);
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const finish = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = request(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'mtb-webhooks/1',
          ...headers,
        },
        lookup: guardedLookup(policy, target.hostname),
        agent: false,
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          if (size >= RESPONSE_LOG_BYTES) {
            truncated = true;
            res.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        const end = () => {
          const all = Buffer.concat(chunks);
          const text = all.subarray(0, RESPONSE_LOG_BYTES).toString('utf8');
          const status = res.statusCode ?? null;
          const ok = status !== null && status >= 200 && status < 300;
          finish(
            done(
              status,
              ok
                ? null
                : status !== null && status >= 300 && status < 400
                  ? `redirect not followed (${status})`
                  : `answered ${status}`,
              text + (truncated || all.length > RESPONSE_LOG_BYTES ? '…' : ''),
            ),
          );
        };
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err: Error) => {
      const message = err instanceof SsrfRefusedError ? `refused: ${err.message}` : err.message;
      finish(done(null, message, null));
    });
    req.end(body);
  });
}
