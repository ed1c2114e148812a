/**
 * Names people give things (API keys, users, organizations) and see again in lists, the CLI and the dashboard.
 * Control characters have no place in them, and NUL would not even survive: the data file's driver binds and reads
 * text as C strings, so a name stored with a NUL came back cut short at it. Bidirectional overrides are refused too:
 * they make a name read differently from what it is.
 */
import { z } from 'zod';

const UNPRINTABLE = /[\p{Cc}\u202A-\u202E\u2066-\u2069]/u;

export const UNPRINTABLE_MESSAGE = 'must not contain control characters or bidirectional overrides';

/**
 * Whether a string of `value` (a parsed JSON body), or a key of one of its objects, holds a NUL. Iterative: call it
 * on a value whose depth is bounded anyway (src/core/json-depth.ts).
 */
export function holdsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (current.includes('\u0000')) return true;
    } else if (Array.isArray(current)) {
      for (const item of current) pending.push(item);
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) {
        if (key.includes('\u0000')) return true;
        pending.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

/** Whether `value` holds no control character and no bidirectional override. */
export function isPrintableText(value: string): boolean {
  return !UNPRINTABLE.test(value);
}

/**
 * The `model` of a gateway request, on every wire: required, at most 256 characters, printable (a model named with
 * a NUL was recorded on its run cut short at it, unlike the name the upstream was sent).
 */
export const modelField = z
  .string()
  .trim()
  .min(1, 'model is required')
  .max(256)
  .refine(isPrintableText, { message: `model ${UNPRINTABLE_MESSAGE}` });

/** A trimmed name of 1 to `max` characters without control characters or bidirectional overrides. */
export function nameSchema(max: number) {
  return z.string().trim().min(1).max(max).refine(isPrintableText, { message: UNPRINTABLE_MESSAGE });
}
