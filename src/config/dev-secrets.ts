import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface DevSecrets {
  jwtSecret: string;
  tenantEncryptionKey: string;
}

export const DEV_SECRETS_FILE = './data/.dev-secrets.json';

/**
 * Outside production, a newcomer needs no secrets to start: they are generated once and kept in
 * ./data/.dev-secrets.json so that restarts, the header CLI and the proxy all agree on them.
 */
export function loadOrCreateDevSecrets(file = DEV_SECRETS_FILE): DevSecrets {
  if (existsSync(file)) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevSecrets>;
    if (parsed.jwtSecret && parsed.tenantEncryptionKey) {
      return { jwtSecret: parsed.jwtSecret, tenantEncryptionKey: parsed.tenantEncryptionKey };
    }
  }
  const secrets: DevSecrets = {
    jwtSecret: randomBytes(48).toString('base64url'),
    tenantEncryptionKey: randomBytes(32).toString('hex'),
  };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return secrets;
}
