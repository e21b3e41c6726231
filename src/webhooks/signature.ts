import { createHmac, randomBytes } from 'node:crypto';

/** D54: `whsec_` + base64 of 32 random bytes (the Standard Webhooks secret form). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a `whsec_…` secret: its base64 part, decoded. */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64');
}

/** `webhook-id`, `webhook-timestamp` and `webhook-signature` of one attempt (Standard Webhooks). */
export function signatureHeaders(
  secret: string,
  id: string,
  timestampS: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const signature = createHmac('sha256', secretKey(secret))
    .update(`${id}.${timestampS}.${body}`)
    .digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': `v1,${signature}`,
  };
}
