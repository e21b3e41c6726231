/** Value formats shared by the configuration and the services that read keys and durations. */

/** Parses `30`, `30s`, `15m`, `24h`, `7d` into seconds; undefined when malformed. */
export function parseDurationSeconds(value: string): number | undefined {
  const m = /^(\d+)\s*(s|m|h|d)?$/.exec(value.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  const factor = { s: 1, m: 60, h: 3600, d: 86400 }[unit] ?? 1;
  const seconds = n * factor;
  return seconds > 0 ? seconds : undefined;
}

/** Decodes a 32-byte key given as 64 hex characters or base64; undefined otherwise (D5). */
export function decodeKey32(value: string | undefined): Buffer | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(v) || /^[A-Za-z0-9_-]{43}$/.test(v)) {
    const buf = Buffer.from(v, 'base64');
    if (buf.length === 32) return buf;
  }
  return undefined;
}
