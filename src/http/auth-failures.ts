/**
 * Failed authentications per client address. The standard rate limiter is keyed by identity, so it runs after
 * authentication and never sees a 401; without this, guessing the operator-chosen bootstrap token (or a session)
 * would be unthrottled. Past `maxPerMinute` failures in a fixed one-minute window, the address gets 429 with
 * `retry-after` until the window ends, before any credential is checked.
 *
 * A credential counts from the moment its check starts, not only once it has failed: requests pipelined on one
 * connection arrive together, and each starts its check before the first has ended, so counting failures alone let
 * a burst of a thousand guesses in one packet all be checked against a limit of 30.
 *
 * Times (`now`) are monotonic milliseconds (`performance.now()`), not the wall clock: a wall clock stepped back an
 * hour (NTP, a resumed VM) held a locked-out address for that hour and kept every window open as long.
 */
export interface AuthFailureLimiter {
  /** Seconds until the address may try again, or 0 when it may try now. */
  retryAfter(address: string, now: number): number;
  /**
   * A request from the address presents a credential: the seconds to refuse it for, as `retryAfter` (also while the
   * checks under way would take the address to its limit), or 0, and then its check counts until `settle`.
   */
  begin(address: string, now: number): number;
  /** The check `begin` admitted is over; `failed` when the credential was refused. */
  settle(address: string, failed: boolean, now: number): void;
}

const WINDOW_MS = 60_000;
const MAX_TRACKED = 100_000;

interface Window {
  /** When the window's first failure happened. */
  start: number;
  /** Failures in the window (none once it has expired). */
  count: number;
  /** Credentials of the address being checked right now. */
  checking: number;
}

export function createAuthFailureLimiter(maxPerMinute: number): AuthFailureLimiter {
  const windows = new Map<string, Window>();

  const failures = (window: Window, now: number) => (now - window.start < WINDOW_MS ? window.count : 0);

  function retryAfter(window: Window | undefined, now: number): number {
    if (!window) return 0;
    const count = failures(window, now);
    if (count + window.checking < maxPerMinute) return 0;
    // Held by the checks under way only: they end within milliseconds.
    if (count < maxPerMinute) return 1;
    return Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
  }

  /** The address's window, made (an empty one) when it has none. Kept once made: every request of a caller reads it. */
  function windowOf(address: string, now: number): Window {
    let window = windows.get(address);
    if (window) return window;
    if (windows.size >= MAX_TRACKED) {
      // Drop the windows without failures or checks under way; if none is, forget the oldest (insertion order) rather
      // than grow without bound.
      for (const [key, value] of windows) if (value.checking === 0 && failures(value, now) === 0) windows.delete(key);
      if (windows.size >= MAX_TRACKED) windows.delete(windows.keys().next().value as string);
    }
    window = { start: now, count: 0, checking: 0 };
    windows.set(address, window);
    return window;
  }

  return {
    retryAfter: (address, now) => retryAfter(windows.get(address), now),
    begin(address, now) {
      const window = windowOf(address, now);
      const wait = retryAfter(window, now);
      if (wait === 0) window.checking += 1;
      return wait;
    },
    settle(address, failed, now) {
      const window = windowOf(address, now);
      // A window forgotten meanwhile (MAX_TRACKED) is made again without the check.
      if (window.checking > 0) window.checking -= 1;
      if (!failed) return;
      if (failures(window, now) === 0) {
        window.start = now;
        window.count = 1;
      } else {
        window.count += 1;
      }
    },
  };
}
