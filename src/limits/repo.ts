/**
 * Attempt counters in the data file (SPEC 8: the per-address limits are shared by every API process). One row per
 * counted attempt; a sliding window counts the rows newer than `now - window`. Checking and recording happen in one
 * write, so two processes (or two concurrent requests) cannot both take the last slot.
 *
 * Times are the wall clock's, shared with the other processes, so a row can be stamped after `now`: by a process that
 * read the clock a moment later, or before the clock stepped back (NTP, a resumed VM, an operator setting the date).
 * Rows up to a window ahead count; rows further ahead are from before a step back, and counting them (all of them,
 * until the clock is back where they were made) held a caller for the whole step: a lockout lasts at most the step
 * plus its window, and never more than two windows.
 */
import type { Store } from '../store/store.ts';

export interface Window {
  limit: number;
  windowMs: number;
}

export interface Verdict {
  allowed: boolean;
  /** When refused: how long until the oldest counted attempt leaves the window. */
  retryAfterMs: number;
  /** When allowed: the row counting this attempt (see `release`). */
  row: number | null;
}

export interface RateEventsRepository {
  /** Record an attempt unless the window is full. */
  take(bucket: string, key: string, window: Window, now: number): Promise<Verdict>;
  /** Uncount an attempt `take` counted (its `row`). */
  release(row: number): Promise<void>;
  /** Delete attempts older than `before` or newer than `after` (see above); returns how many. */
  prune(before: number, after: number, batch: number): Promise<number>;
}

interface WindowRow {
  n: number;
  oldest: number | null;
}

const COUNT_SQL = 'SELECT COUNT(*) AS n, MIN(at) AS oldest FROM rate_events WHERE bucket = ? AND key = ? AND at > ? AND at <= ?';
const INSERT_SQL = 'INSERT INTO rate_events (bucket, key, at) VALUES (?, ?, ?)';

function verdictOf(row: WindowRow | undefined, window: Window, now: number): Verdict {
  const n = row?.n ?? 0;
  if (n < window.limit) return { allowed: true, retryAfterMs: 0, row: null };
  return { allowed: false, retryAfterMs: Math.max(1, (row?.oldest ?? now) + window.windowMs - now), row: null };
}

export function createRateEventsRepository(store: Store): RateEventsRepository {
  return {
    take(bucket, key, window, now) {
      return store.write((sql) => {
        const verdict = verdictOf(sql.get<WindowRow>(COUNT_SQL, [bucket, key, now - window.windowMs, now + window.windowMs]), window, now);
        if (verdict.allowed) {
          sql.run(INSERT_SQL, [bucket, key, now]);
          verdict.row = sql.get<{ row: number }>('SELECT last_insert_rowid() AS row')!.row;
        }
        return verdict;
      });
    },
    async release(row) {
      await store.write((sql) => sql.run('DELETE FROM rate_events WHERE rowid = ?', [row]));
    },
    prune(before, after, batch) {
      return store.write(
        (sql) =>
          sql.run('DELETE FROM rate_events WHERE rowid IN (SELECT rowid FROM rate_events WHERE at < ? OR at > ? LIMIT ?)', [before, after, batch])
            .changes,
      );
    },
  };
}
