/** Jitter added to each retry delay of a webhook delivery (D54): up to this fraction of it. */
const JITTER = 0.2;

/**
 * The delay before a delivery's retry `attempt` (1-based) on WEBHOOK_RETRY_SCHEDULE_S, with up to
 * 20 % jitter; the schedule's last value repeats. (Workflow steps back off by their own policy:
 * workflow/definition/backoff.ts.)
 */
export function retryDelayMs(schedule: readonly number[], attempt: number, random = Math.random): number {
  const base = schedule[Math.min(attempt, schedule.length) - 1] ?? schedule[schedule.length - 1] ?? 5000;
  return Math.round(base * (1 + JITTER * random()));
}
