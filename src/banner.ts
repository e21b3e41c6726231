import type { AppConfig } from './config/config.schema';

export interface BannerInput {
  config: AppConfig;
  url: string;
  /** The bind address and port, and who can reach it. */
  listening: string;
  database: string;
  cache: string;
  demoUsers?: Array<{ email: string; tenant: string; role: string }>;
  demoPassword?: string;
}

/** The one start-up banner: where the service is, what it runs on, and how to get in. */
export function renderBanner(b: BannerInput): string {
  const mode =
    b.config.db.type === 'sqlite' && !b.config.cache.url ? 'embedded (SQLite + in-process cache)' : 'server';
  const lines = [
    `Service     ${b.url}`,
    `Listening   ${b.listening}`,
    `Mode        ${mode}, NODE_ENV=${b.config.nodeEnv}`,
    `Database    ${b.database}`,
    `Cache       ${b.cache}`,
    `API docs    ${b.url}/api-docs`,
    `Probes      ${b.url}/healthz  /readyz  /livez`,
    `Metrics     ${b.url}/metrics`,
  ];
  if (b.config.generatedSecrets.length > 0) {
    lines.push(
      `Secrets     ${b.config.generatedSecrets.join(', ')} generated for development in ./data/.dev-secrets.json`,
    );
  }
  if (b.demoUsers && b.demoUsers.length > 0 && !b.config.isProduction) {
    lines.push('', `Demo users  (password: ${b.demoPassword ?? '(DEMO_PASSWORD)'})`);
    for (const u of b.demoUsers) lines.push(`  ${u.email.padEnd(22)} tenant ${u.tenant.padEnd(8)} ${u.role}`);
  }
  const width = Math.max(...lines.map((l) => l.length)) + 2;
  const rule = '─'.repeat(width);
  return ['', `┌${rule}┐`, ...lines.map((l) => `│ ${l.padEnd(width - 1)}│`), `└${rule}┘`, ''].join('\n');
}
