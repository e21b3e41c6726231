/**
 * One declaration per environment variable (STYLE, after twenty's `config-variables.ts`): its name,
 * default, description, secret flag and rule live together, and reading it returns a typed value.
 * Problems are collected, not thrown, so that start-up lists every bad variable at once.
 */

export type Env = Record<string, string | undefined>;

/** What `.env.example` and the docs show of a variable. */
export interface VariableSpec {
  name: string;
  description: string;
  default?: string;
  /** Redacted wherever configuration is shown (logs, banner). */
  secret?: boolean;
}

export interface Variable<T> extends VariableSpec {
  /** The typed value: the environment's (trimmed), else the default; problems are appended. */
  read(env: Env, problems: string[]): T;
}

interface Options {
  description: string;
  default?: string;
  secret?: boolean;
}

/** The trimmed value, or the default when unset or blank. */
function rawOf(env: Env, spec: VariableSpec): string | undefined {
  const v = env[spec.name];
  return v === undefined || v.trim() === '' ? spec.default : v.trim();
}

/** A text variable; `rule` returns a problem (without the name) or undefined. */
export function text(
  name: string,
  o: Options & { rule?: (value: string) => string | undefined },
): Variable<string | undefined> {
  const spec = { name, ...o };
  return {
    ...spec,
    read(env, problems) {
      const v = rawOf(env, spec);
      const problem = v === undefined ? undefined : o.rule?.(v);
      if (problem) problems.push(`${name}: ${problem}`);
      return v;
    },
  };
}

/** A text variable read exactly as given (passwords may begin or end with blanks). */
export function verbatim(name: string, o: Options): Variable<string> {
  return { name, ...o, read: (env) => env[name] ?? o.default ?? '' };
}

/** An integer within [min, max]; `fallback` when unset and without a default. */
export function int(
  name: string,
  o: Options & { min?: number; max?: number },
): Variable<(fallback?: number) => number> {
  const spec = { name, ...o };
  return {
    ...spec,
    read(env, problems) {
      const v = rawOf(env, spec);
      if (v === undefined) return (fallback = 0) => fallback;
      if (!/^-?\d+$/.test(v)) {
        problems.push(`${name}: must be an integer (got "${v}")`);
        return (fallback = 0) => fallback;
      }
      const n = Number(v);
      if ((o.min !== undefined && n < o.min) || (o.max !== undefined && n > o.max)) {
        problems.push(`${name}: must be between ${o.min ?? '-∞'} and ${o.max ?? '∞'} (got ${n})`);
      }
      return () => n;
    },
  };
}

/** true / false (also 1/0, yes/no, on/off). */
export function bool(name: string, o: Options): Variable<boolean> {
  const spec = { name, ...o };
  return {
    ...spec,
    read(env, problems) {
      const v = (rawOf(env, spec) ?? 'false').toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(v)) return true;
      if (['false', '0', 'no', 'off'].includes(v)) return false;
      problems.push(`${name}: must be true or false (got "${v}")`);
      return false;
    },
  };
}

/** One of `allowed`; the first is the default when none is declared. */
export function oneOf<T extends string>(name: string, allowed: readonly T[], o: Options): Variable<T> {
  const spec = { name, ...o };
  return {
    ...spec,
    read(env, problems) {
      const v = rawOf(env, spec) ?? allowed[0];
      if (!(allowed as readonly string[]).includes(v)) {
        problems.push(`${name}: must be one of ${allowed.join(', ')} (got "${v}")`);
        return allowed[0];
      }
      return v as T;
    },
  };
}

/** Every value of a declaration map, read from `env`. */
export type Values<V extends Record<string, Variable<unknown>>> = {
  [K in keyof V]: V[K] extends Variable<infer T> ? T : never;
};

export function readAll<V extends Record<string, Variable<unknown>>>(
  variables: V,
  env: Env,
  problems: string[],
): Values<V> {
  const out: Record<string, unknown> = {};
  for (const [key, variable] of Object.entries(variables)) out[key] = variable.read(env, problems);
  return out as Values<V>;
}

/** The text of `.env.example`: every variable with its description and default, in order. */
export function envExample(variables: readonly VariableSpec[], header: string): string {
  const lines = [header.trimEnd(), ''];
  for (const v of variables) lines.push(`# ${v.description}`, `# ${v.name}=${v.default ?? ''}`);
  return `${lines.join('\n')}\n`;
}
