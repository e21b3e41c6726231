import { createHash } from 'node:crypto';
import type { AuthUser } from '../common/request-context';
import { rowFilterVariables } from '../profile/row-filter';
import type { RecordContext } from '../records/record-context';

export type Shaped = { event: 'created' | 'updated' | 'deleted'; data: string } | null;

/**
 * A narrower view than the entity read (a dataview's columns and default filters): its key
 * (streams of one key share each shaped event) and how it turns the entity read's event into its own.
 */
export interface LiveView {
  readonly key: string;
  narrow(shaped: Shaped): Shaped;
}

/** One open stream: who reads, what, and where the bytes go. */
export interface LiveStream {
  /**
   * Who reads, with the profile and registry entry as they were last resolved: the recheck
   * replaces it when the profile or the registry entry changed (issue 34 #3).
   */
  ctx: RecordContext;
  /** Epoch ms the stream's token was issued (a user-wide revocation refuses earlier ones). */
  readonly issuedAtMs: number;
  /** The sequence of the last event this stream has passed (sent or not). */
  last: number;
  view?: LiveView;
  /** Builds the view again for a re-resolved context; throws when the view no longer applies. */
  readonly viewOf?: (ctx: RecordContext) => LiveView;
  /** Set once the stream has ended (its client went, it was closed or dropped). */
  readonly closed: boolean;
  write(chunk: string): void;
  /**
   * Bytes written to the stream in earlier turns of the event loop that the client has not taken
   * yet (queued in this process).
   */
  backlog(): number;
  /** Ends the stream; `abort`: at once, dropping what is still queued (a reader too far behind). */
  close(abort?: boolean): void;
}

/** The SSE text of one event. */
export function sseEvent(id: number, event: string, data: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${data}\n\n`;
}

/** Whether the user's role, or what it grants, is not what the stream was opened with. */
export function roleChanged(then: AuthUser, now: AuthUser): boolean {
  if (then.roleId !== now.roleId) return true;
  const a = [...then.permissions].sort();
  const b = [...now.permissions].sort();
  return a.length !== b.length || a.some((p, i) => p !== b[i]);
}

const versions = new WeakMap<RecordContext, string>();

/**
 * The version of what shapes a context's rows: a hash of its profile row id, the policy read from
 * it and the registry entry. The profile table has no version column, and a profile edited in place
 * keeps its id, so the content is what tells two versions apart. Computed once per context.
 */
export function shapingVersion(ctx: RecordContext): string {
  let version = versions.get(ctx);
  if (version === undefined) {
    version = createHash('sha256')
      .update(JSON.stringify([ctx.profileId, ctx.policy, ctx.entity]))
      .digest('base64url')
      .slice(0, 22);
    versions.set(ctx, version);
  }
  return version;
}

/**
 * Streams that see an event alike: same entity, profile version and, for @user row filters, user.
 * The version is part of the key, so an event shaped for an older profile is never handed to a
 * stream that reads with the newer one (issue 34 #3).
 */
export function viewKey(ctx: RecordContext): string {
  const vars = ctx.policy.rowFilter ? rowFilterVariables(ctx.policy.rowFilter) : { userAttrs: [] };
  return JSON.stringify([
    ctx.entity.code,
    ctx.entity.registryId,
    ctx.profileId,
    shapingVersion(ctx),
    vars.userAttrs.length > 0 ? ctx.user.userId : null,
  ]);
}
