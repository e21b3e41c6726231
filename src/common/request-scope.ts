import { AsyncLocalStorage } from 'node:async_hooks';

/** Who and what a unit of work is for: an HTTP request, or a job a worker runs. */
export interface RequestScope {
  requestId: string;
  tenantId?: string;
  userId?: string | number;
}

const storage = new AsyncLocalStorage<RequestScope>();

/**
 * The async-local context of the current unit of work (STYLE: immich's CLS; ARCHITECTURE
 * `common`): set by the HTTP pipeline for every request (health/http-hooks.service.ts, then the
 * guards add the tenant and the user) and by workers around each job, so that every log line
 * written meanwhile — access lines, services, use cases — carries requestId, tenantId and userId.
 * Services still take the tenant id as an explicit argument: the scope is for logs, never for
 * deciding whose data to touch.
 */
export const requestScope = {
  /** Runs `work` (and everything it starts) inside `scope`. */
  run<T>(scope: RequestScope, work: () => T): T {
    return storage.run({ ...scope }, work);
  },

  /**
   * Runs `work` inside `scope` itself, not a copy: the HTTP hook keeps the object on the request,
   * and the guards add the tenant and the user to it there (setLogContext) without looking the
   * scope up through async_hooks on every request.
   */
  enter<T>(scope: RequestScope, work: () => T): T {
    return storage.run(scope, work);
  },

  /** The scope of the code running now, if any. */
  current(): RequestScope | undefined {
    return storage.getStore();
  },

  /** Adds fields (the tenant once decrypted, the user once verified) to the current scope. */
  set(fields: Partial<RequestScope>): void {
    const store = storage.getStore();
    if (store) Object.assign(store, fields);
  },
};
