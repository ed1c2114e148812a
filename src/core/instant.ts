/**
 * The one query parameter for a point in time (`since`, `until`): an ISO 8601 timestamp or epoch milliseconds, held
 * to the years 0000-9999. JS dates reach further (±8.64e15 ms), but an instant near that edge cannot be formatted
 * once a window rounds it out to the end of its UTC day (`toISOString` throws a RangeError: a 500 where the caller
 * sent a bad parameter), and years past 9999 are not ISO 8601 without an agreed extension anyway.
 */
import { z } from 'zod';

/** 0000-01-01T00:00:00.000Z. */
export const INSTANT_MIN_MS = Date.parse('0000-01-01T00:00:00.000Z');
/** 9999-12-31T23:59:59.999Z: the end of a UTC day, so a window widened to whole days stays in range. */
export const INSTANT_MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** Optional query instant: epoch milliseconds out, undefined when absent or blank; 400 when unparseable or out of range. */
export const instantQuery = z
  .string()
  .trim()
  .optional()
  .transform((value, ctx) => {
    if (!value) return undefined;
    const ms = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    if (!Number.isFinite(ms)) {
      ctx.addIssue({ code: 'custom', message: 'expected an ISO 8601 timestamp or epoch milliseconds' });
      return z.NEVER;
    }
    if (ms < INSTANT_MIN_MS || ms > INSTANT_MAX_MS) {
      ctx.addIssue({ code: 'custom', message: 'must be between 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z' });
      return z.NEVER;
    }
    return ms;
  });
