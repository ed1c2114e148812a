/**
 * A trace event's payload as stored: its JSON text parsed. svc stores only what JSON.stringify wrote, of values nested
 * at most MAX_JSON_DEPTH deep (what it takes from outside is bounded so), so text that is not JSON, or nests deeper,
 * was edited or damaged in the data file. Such a payload stands as `{storedText}`, marked with what is wrong with it
 * so that verification reports it (chain.ts), rather than failing every read of the run (a value nested that deep
 * overflows the stack of whatever walks it: hashing, JSON.stringify): its trace and evidence packet still show it,
 * integrity says where it is.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';
import type { StoredText } from './types.ts';

const unreadable = new WeakMap<object, string>();

function standIn(text: string, why: string): StoredText & Record<string, unknown> {
  const payload = { storedText: text };
  unreadable.set(payload, why);
  return payload;
}

/** Shorter text cannot nest objects and arrays more than MAX_JSON_DEPTH deep: it is not walked for its depth. */
const SHALLOW_TEXT_MAX = 2 * MAX_JSON_DEPTH;

export function storedPayload(text: string): Record<string, unknown> {
  return storedJson<Record<string, unknown>>(text) as Record<string, unknown>;
}

/** What is wrong with the stored text `payload` stands for (`is not JSON`, ...), or null for a payload read as stored. */
export function unreadablePayload(payload: unknown): string | null {
  return typeof payload === 'object' && payload !== null ? (unreadable.get(payload) ?? null) : null;
}

/**
 * A run's own stored JSON (its route explanation, its error, a feedback record's body and actor, a replay bundle's
 * identity and route inputs), parsed; `{storedText}`, marked as a payload's stand-in is, when it is not JSON or nests
 * deeper than svc stores (the data file edited), so that the runs list and the run's reads still answer, the damage
 * shown where the value was (a value nested that deep overflowed the stack of the answer's JSON writer). Each row of
 * the runs list reads one: as for a trace payload, only text long enough to nest that deep is walked for its depth.
 */
export function storedJson<T extends object>(text: string): T | StoredText {
  let value: T;
  try {
    value = JSON.parse(text) as T;
  } catch {
    return standIn(text, 'is not JSON') as StoredText;
  }
  if (text.length > SHALLOW_TEXT_MAX && nestsDeeperThan(value, MAX_JSON_DEPTH)) return standIn(text, `nests more than ${MAX_JSON_DEPTH} levels deep`) as StoredText;
  return value;
}

/** `value` as stored, or null where it stands for stored text that could not be read (`{storedText}`). */
export function readableOrNull<T extends object>(value: T | StoredText | null): T | null {
  return value !== null && !unreadable.has(value) ? (value as T) : null;
}
