/**
 * Values of svc's own columns as stored, for the views: times and integers that an edit of the data file may have made
 * into what svc never writes.
 *
 * A time as stored (epoch milliseconds), as the views write it. svc stores only `Date.now()` values, so a value that
 * is not a number a Date holds (text, a number past ±8.64e15 ms: `toISOString` throws a RangeError for either) was
 * edited or damaged in the data file. It is answered as null rather than failing every read of the run: the row is
 * still shown, and for a trace event integrity reports it (its hash covers the time as stored).
 */
import { toIso } from '../core/clock.ts';

/** The largest distance from the epoch, in milliseconds, that a Date holds (ECMAScript's time value range). */
const TIME_VALUE_MAX = 8.64e15;

export function storedInstant(epochMs: number): string | null {
  return typeof epochMs === 'number' && epochMs >= -TIME_VALUE_MAX && epochMs <= TIME_VALUE_MAX ? toIso(epochMs) : null;
}

/**
 * An integer column as read: the store answers one past 2^53 as a BigInt, which no hash or JSON writer takes (both
 * throw, as does arithmetic with a number). svc writes none that large, so it is the edited value, as a number (the
 * nearest double): the row is shown rather than failing every read of it. A typeof check where rows are mapped.
 */
export function storedNumber(value: number | bigint): number;
export function storedNumber(value: number | bigint | null): number | null;
export function storedNumber(value: number | bigint | null): number | null {
  return typeof value === 'bigint' ? Number(value) : value;
}
