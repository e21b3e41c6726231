/** Paths the readiness gate lets through while the service is not ready (spec §3.3). */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/livez']);
