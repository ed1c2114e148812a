/**
 * Text svc stores as it was sent. The data file's driver binds and reads text as C strings, so anything stored with a
 * NUL comes back cut short at it: bodies of the management API may hold none (src/http/json-body.ts). Names people
 * give things (API keys, users, organizations) and see again in lists, the CLI and the dashboard hold no control
 * characters at all, nor bidirectional overrides, which make a name read differently from what it is, nor the Unicode
 * line and paragraph separators (U+2028, U+2029), at which browsers, mail clients and terminals break lines: a name
 * holding them laid out lines of their own in svc's e-mails and pages. A name a run is listed by (a model's) holds
 * none of those and no character that shows nothing either (isPrintableAndVisible). Both rules hold input only: text
 * stored before a character was refused is read as it is.
 */
import { z } from 'zod';

/** Controls, the line and paragraph separators, and the bidirectional overrides and isolates. */
const UNPRINTABLE_CHARACTERS = String.raw`\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069`;
const UNPRINTABLE = new RegExp(`[${UNPRINTABLE_CHARACTERS}]`, 'u');
/**
 * Those, and every character that shows nothing (Unicode's default-ignorable code points: zero-width spaces and
 * joiners, a BOM, variation selectors, the bidirectional marks). One character class, so a check is one pass.
 */
const UNPRINTABLE_OR_INVISIBLE = new RegExp(`[${UNPRINTABLE_CHARACTERS}\\p{Default_Ignorable_Code_Point}]`, 'u');

export const UNPRINTABLE_MESSAGE = 'must not contain control characters, line separators or bidirectional overrides';
export const UNPRINTABLE_OR_INVISIBLE_MESSAGE = 'must not contain control characters, line separators, bidirectional overrides or invisible characters';

/**
 * Whether a string of `value` (a parsed JSON body), or a key of one of its objects, passes `test`. Iterative: call it
 * on a value whose depth is bounded anyway (src/core/json-depth.ts).
 */
function holdsText(value: unknown, test: (text: string) => boolean): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const current = pending.pop();
    if (typeof current === 'string') {
      if (test(current)) return true;
    } else if (Array.isArray(current)) {
      for (const item of current) pending.push(item);
    } else if (current !== null && typeof current === 'object') {
      for (const key in current) {
        if (test(key)) return true;
        pending.push((current as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

const hasNul = (text: string): boolean => text.includes('\u0000');
const hasLoneSurrogate = (text: string): boolean => !text.isWellFormed();

/** Whether a string or key of `value` (a parsed JSON body) holds a NUL. */
export function holdsNul(value: unknown): boolean {
  return holdsText(value, hasNul);
}

/**
 * Whether a string or key of `value` (a parsed JSON body) holds a lone UTF-16 surrogate, which JSON can only carry as
 * an escape (`"\\ud800"`). Such a string is no Unicode text: the data file's driver writes it as bytes that are not
 * UTF-8 and may cut the text short after it, and UTF-8 encoders (a hash's input, a socket) write U+FFFD in its place.
 */
export function holdsLoneSurrogate(value: unknown): boolean {
  return holdsText(value, hasLoneSurrogate);
}

/**
 * `text` without the run of `char` it ends with. A loop, not `text.replace(/x+$/, '')`: that expression tries every
 * position of a run of `char` that does not end the text, quadratic in the run's length (text from outside can be long).
 */
export function withoutTrailing(text: string, char: string): string {
  const code = char.charCodeAt(0);
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === code) end -= 1;
  return text.slice(0, end);
}

/** Whether `value` holds no control character, no line or paragraph separator and no bidirectional override. */
export function isPrintableText(value: string): boolean {
  return !UNPRINTABLE.test(value);
}

/**
 * Whether `value` is printable text (isPrintableText) without a character that shows nothing: a name that must read as
 * what it is, such as a model's (`gpt\u200b-4o` read exactly like `gpt-4o`), which no emoji sequence needs.
 */
export function isPrintableAndVisible(value: string): boolean {
  return !UNPRINTABLE_OR_INVISIBLE.test(value);
}

/**
 * Text made only of white space and characters that show nothing (default-ignorable code points: zero-width spaces
 * and joiners, the word joiner, a soft hyphen, Hangul fillers, variation selectors). `trim()` keeps them, so such a name
 * passed "at least one character" and read as empty in every list. They stay allowed inside a name that shows
 * something (an emoji sequence is joined by U+200D and styled by U+FE0F).
 */
const SHOWS_NOTHING = /^[\s\p{Default_Ignorable_Code_Point}]*$/u;

export const BLANK_MESSAGE = 'must show at least one visible character';

/** Whether `value` holds a character that shows (SHOWS_NOTHING). */
export function showsSomething(value: string): boolean {
  return !SHOWS_NOTHING.test(value);
}

/**
 * A trimmed name of 1 to `max` characters without control characters or bidirectional overrides, that shows at least
 * one character.
 */
export function nameSchema(max: number) {
  return z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine(isPrintableText, { message: UNPRINTABLE_MESSAGE })
    .refine(showsSomething, { message: BLANK_MESSAGE });
}
