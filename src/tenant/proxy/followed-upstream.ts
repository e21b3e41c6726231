import { readServiceAddress } from '../../config/service-address';

/** How long a looked-up address is used before the record is read again. */
export const FOLLOW_TTL_MS = 1000;

/**
 * The proxy's upstream when PROXY_UPSTREAM is unset (issue 20 #7): the address the service
 * started from the same directory recorded (config/service-address.ts) while that process runs,
 * else `fallback` (API_HOST and API_PORT of the proxy's own configuration). Read again at most
 * once a second, so a service restarted on another port is followed within a second.
 */
export class FollowedUpstream {
  private last?: { at: number; url: string };

  constructor(
    private readonly fallback: string,
    private readonly read: () => string | undefined = () => readServiceAddress()?.url,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The banner's words for the upstream, true of the moment they are printed (issue 34 #14): the
   * service of this directory only while its record names one, else the configured address.
   */
  describe(): string {
    const recorded = this.read();
    if (recorded) return `the service started in this directory (now ${recorded})`;
    return (
      `${this.fallback} (API_HOST:API_PORT: no service started in this directory is running; ` +
      'one that starts is followed)'
    );
  }

  current(): string {
    const at = this.now();
    if (this.last && at - this.last.at < FOLLOW_TTL_MS) return this.last.url;
    const url = this.read() ?? this.fallback;
    this.last = { at, url };
    return url;
  }
}
