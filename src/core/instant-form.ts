/**
 * The forms of a point in time (`since`, `until`): an ISO 8601 timestamp or epoch milliseconds, held to the years
 * 0000-9999. Without zod, so the CLI and the runs TUI read `--since` as the API does (instant.ts is the API's query
 * schema). JS dates reach further (±8.64e15 ms), but an instant near that edge cannot be formatted once a window
 * rounds it out to the end of its UTC day (`toISOString` throws a RangeError: a 500 where the caller sent a bad
 * parameter), and years past 9999 are not ISO 8601 without an agreed extension anyway.
 *
 * Each form is recognised before anything is parsed (docs/evidence.md, "Instants"): `Date.parse` alone falls back to
 * V8's legacy formats for a string that is not ISO, so `1.5` and `-1` were read as days of 2001, `March 7 2026` and
 * `2026/11/26` as dates, and it rolls an ISO date that does not exist (`2026-02-30`) over into the next month.
 */

/** 0000-01-01T00:00:00.000Z. */
export const INSTANT_MIN_MS = Date.parse('0000-01-01T00:00:00.000Z');
/** 9999-12-31T23:59:59.999Z: the end of a UTC day, so a window widened to whole days stays in range. */
export const INSTANT_MAX_MS = Date.parse('9999-12-31T23:59:59.999Z');

/** What an instant may be written as: the 400's message when it is none of them. */
export const FORMS_MESSAGE =
  'expected an ISO 8601 date or timestamp (2026-03-07, 2026-03-07T12:00:00Z, 2026-03-07T12:00:00.000+01:00) or epoch milliseconds (an integer, negative before 1970)';

/** Epoch milliseconds: decimal digits, negative before 1970 (down to year 0000). */
const EPOCH_MS = /^-?\d+$/;

/**
 * ISO 8601 in the forms of ECMAScript's date time string format: a year (four digits, or six with a sign), then
 * optionally month, day, and after a full date `T`, hours and minutes, seconds, a fraction, and `Z` or an offset
 * `±HH:mm` (no offset: the server's local time, as `Date.parse` reads it). A four-digit year alone never gets here:
 * digits alone are epoch milliseconds. `Date.parse` checks the time's ranges; the day of the month is checked first.
 */
const ISO_8601 =
  /^(?<year>\d{4}|[+-]\d{6})(?:-(?<month>0[1-9]|1[0-2])(?:-(?<day>0[1-9]|[12]\d|3[01])(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)?)?$/;

function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

function daysInMonth(year: number, month: number): number {
  return month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Epoch milliseconds of an instant in one of the accepted forms, out of range or not; null when it is in none. */
export function parseInstant(value: string): number | null {
  // `-0` is 0; an integer too long for a double becomes Infinity, out of range below.
  if (EPOCH_MS.test(value)) return Number(value) + 0;
  const iso = ISO_8601.exec(value)?.groups;
  if (!iso) return null;
  // ECMAScript has no `-000000` (year zero is `0000` or `+000000`); V8 would read it as 2001.
  if (iso.year === '-000000') return null;
  const year = Number(iso.year);
  if (iso.day !== undefined && Number(iso.day) > daysInMonth(year, Number(iso.month))) return null;
  const ms = Date.parse(value);
  if (!Number.isNaN(ms)) return ms;
  // Past the reach of JS dates (±275760 years) the year alone says it is out of range; otherwise the time was wrong.
  return year > 9999 ? Infinity : year < 0 ? -Infinity : null;
}

/** Epoch milliseconds of an instant in one of the accepted forms and in range, else null (what the API would 400). */
export function instantMs(value: string): number | null {
  const ms = parseInstant(value.trim());
  return ms !== null && ms >= INSTANT_MIN_MS && ms <= INSTANT_MAX_MS ? ms : null;
}
