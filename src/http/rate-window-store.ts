/**
 * The counters of the per-surface rate limiter (@fastify/rate-limit's `store` option), in the process's memory as its
 * own LocalStore keeps them: a fixed window per caller, the 5,000 most recently seen callers kept (LocalStore's `cache`
 * default; a caller forgotten starts a new window, so keeping fewer let a caller at its limit go on as soon as that
 * many others had been seen within its minute). Unlike LocalStore, windows are timed by the monotonic clock
 * (`performance.now()`), not `Date.now()`: with the wall clock, a clock stepped back an hour (NTP, a resumed VM, an
 * operator setting the date) held every caller that had reached its limit for that hour, and let every caller's count
 * run on as long.
 *
 * svc sets neither `continueExceeding` nor `exponentialBackoff`, so the store implements neither.
 */

/** What the plugin reads from a store's answer: the count so far in the window and the milliseconds left of it. */
interface WindowState {
  current: number;
  ttl: number;
}

type Answer = (error: Error | null, state: WindowState) => void;

interface Window {
  count: number;
  /** When the window began (`performance.now()`). */
  startedAt: number;
}

const CALLERS_KEPT = 5_000;

export class MonotonicRateWindows {
  /** In order of last use, oldest first: the first one goes when a new caller would exceed `CALLERS_KEPT`. */
  private readonly windows = new Map<string, Window>();
  /** The key used last, already at the map's end: a caller's burst moves nothing. */
  private newest: string | undefined;

  incr(key: string, answer: Answer, timeWindow: number): void {
    const now = performance.now();
    const window = this.touch(key);
    if (!window) {
      this.add(key, { count: 1, startedAt: now });
      answer(null, { current: 1, ttl: timeWindow });
    } else if (window.startedAt + timeWindow <= now) {
      window.count = 1;
      window.startedAt = now;
      answer(null, { current: 1, ttl: timeWindow });
    } else {
      window.count += 1;
      answer(null, { current: window.count, ttl: timeWindow - (now - window.startedAt) });
    }
  }

  /** The state without counting a request (the plugin's `{ increment: false }`). */
  read(key: string, answer: Answer, timeWindow: number): void {
    const now = performance.now();
    const window = this.windows.get(key);
    if (!window || window.startedAt + timeWindow <= now) answer(null, { current: 0, ttl: 0 });
    else answer(null, { current: window.count, ttl: timeWindow - (now - window.startedAt) });
  }

  /** A route with a limit of its own counts apart. */
  child(): MonotonicRateWindows {
    return new MonotonicRateWindows();
  }

  private touch(key: string): Window | undefined {
    const window = this.windows.get(key);
    if (window && key !== this.newest) {
      this.windows.delete(key);
      this.windows.set(key, window);
      this.newest = key;
    }
    return window;
  }

  private add(key: string, window: Window): void {
    if (this.windows.size >= CALLERS_KEPT) this.windows.delete(this.windows.keys().next().value as string);
    this.windows.set(key, window);
    this.newest = key;
  }
}
