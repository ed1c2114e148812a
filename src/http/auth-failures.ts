/**
 * Failed authentications per client address. The standard rate limiter is keyed by identity, so it runs after
 * authentication and never sees a 401; without this, guessing the operator-chosen bootstrap token (or a session)
 * would be unthrottled. Past `maxPerMinute` failures in a fixed one-minute window, the address gets 429 with
 * `retry-after` until the window ends, before any credential is checked.
 */
export interface AuthFailureLimiter {
  /** Seconds until the address may try again, or 0 when it may try now. */
  retryAfter(address: string, now: number): number;
  record(address: string, now: number): void;
}

const WINDOW_MS = 60_000;
const MAX_TRACKED = 100_000;

export function createAuthFailureLimiter(maxPerMinute: number): AuthFailureLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  return {
    retryAfter(address, now) {
      const window = windows.get(address);
      if (!window || now - window.start >= WINDOW_MS || window.count < maxPerMinute) return 0;
      return Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
    },
    record(address, now) {
      const window = windows.get(address);
      if (window && now - window.start < WINDOW_MS) {
        window.count += 1;
        return;
      }
      if (windows.size >= MAX_TRACKED) {
        // Drop expired windows; if all are live, forget the oldest (insertion order) rather than grow without bound.
        for (const [key, value] of windows) if (now - value.start >= WINDOW_MS) windows.delete(key);
        if (windows.size >= MAX_TRACKED) windows.delete(windows.keys().next().value as string);
      }
      windows.set(address, { start: now, count: 1 });
    },
  };
}
