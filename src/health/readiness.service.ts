import { Injectable } from '@nestjs/common';

/** The three start-up flags of spec §3.3. */
export type ReadinessFlag = 'redis' | 'externalDbs' | 'cache';
export type ReadinessFlags = Record<ReadinessFlag, boolean>;

@Injectable()
export class ReadinessService {
  private readonly flags: ReadinessFlags = { redis: false, externalDbs: false, cache: false };
  private shuttingDown = false;
  private failure?: string;
  private changes = 0;

  set(flag: ReadinessFlag, value = true): void {
    if (this.flags[flag] !== value) this.changes++;
    this.flags[flag] = value;
  }

  /**
   * Counts the changes of the flags and of shutting down: a probe result computed before the last
   * change (ProbeChecks) is not served again, so a probe never reports a state older than it.
   */
  get epoch(): number {
    return this.changes;
  }

  snapshot(): ReadinessFlags {
    return { ...this.flags };
  }

  /** All three flags are set: start-up is done (whether or not the service is shutting down). */
  get started(): boolean {
    return this.flags.redis && this.flags.externalDbs && this.flags.cache;
  }

  get ready(): boolean {
    return !this.shuttingDown && this.started;
  }

  /** During graceful shutdown /readyz turns 503 so load balancers drain the instance. */
  markShuttingDown(): void {
    if (this.shuttingDown) return;
    this.changes++;
    this.shuttingDown = true;
    for (const listener of this.shutdownListeners) listener();
  }

  private readonly shutdownListeners: Array<() => void> = [];

  /**
   * Runs `listener` when the shutdown begins, before the HTTP drain: for what holds a connection
   * open without end (a live change stream), which the drain would otherwise wait for.
   */
  onShuttingDown(listener: () => void): void {
    this.shutdownListeners.push(listener);
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** A start-up step gave up (retries exhausted); kept for /healthz and the logs. */
  markFailed(reason: string): void {
    this.failure = reason;
  }

  get startupFailure(): string | undefined {
    return this.failure;
  }
}
