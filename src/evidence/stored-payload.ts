/**
 * A trace event's payload as stored: its JSON text parsed. svc stores only what JSON.stringify wrote, of values nested
 * at most MAX_JSON_DEPTH deep (what it takes from outside is bounded so), so text that is not JSON, or nests deeper,
 * was edited or damaged in the data file. Such a payload stands as `{storedText}`, marked with what is wrong with it
 * so that verification reports it (chain.ts), rather than failing every read of the run (a value nested that deep
 * overflows the stack of whatever walks it: hashing, JSON.stringify): its trace and evidence packet still show it,
 * integrity says where it is.
 */
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../core/json-depth.ts';

const unreadable = new WeakMap<object, string>();

function standIn(text: string, why: string): Record<string, unknown> {
  const payload = { storedText: text };
  unreadable.set(payload, why);
  return payload;
}

/** Shorter text cannot nest objects and arrays more than MAX_JSON_DEPTH deep: it is not walked for its depth. */
const SHALLOW_TEXT_MAX = 2 * MAX_JSON_DEPTH;

export function storedPayload(text: string): Record<string, unknown> {
  let payload: Record<string, unknown>;
  try {
    payload = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return standIn(text, 'is not JSON');
  }
  if (text.length > SHALLOW_TEXT_MAX && nestsDeeperThan(payload, MAX_JSON_DEPTH)) return standIn(text, `nests more than ${MAX_JSON_DEPTH} levels deep`);
  return payload;
}

/** What is wrong with the stored text `payload` stands for (`is not JSON`, ...), or null for a payload read as stored. */
export function unreadablePayload(payload: unknown): string | null {
  return typeof payload === 'object' && payload !== null ? (unreadable.get(payload) ?? null) : null;
}
