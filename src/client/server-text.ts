/**
 * Text a server wrote (an error's message, its code) as the client puts it into an Error. The server may not be svc
 * (`--url`, a proxy): its `error.message` went into the Error's message whole, so megabytes of it, or control
 * characters (an ESC that clears the screen, a CR that overwrites a log line, a bidirectional override), reached
 * every log and terminal the message is written to. The full error object stays where the caller can read it as data.
 * The characters written as `\u` escapes are those of src/core/terminal-escapes.ts, as the CLI shows a server's text.
 */
import { escapedToOneLine } from '../core/terminal-escapes.ts';

/** The most of a server's message an Error's message quotes (as much as SPEC 4.20 quotes of the body). */
export const MAX_QUOTED_CHARS = 500;

/** The first MAX_QUOTED_CHARS characters of `text` (`…` when cut), each unsafe character written as its `\u` escape. */
export function quoted(text: string): string {
  if (text.length <= MAX_QUOTED_CHARS) return escapedToOneLine(text);
  // Not between the two halves of a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text.charAt(MAX_QUOTED_CHARS - 1)) ? MAX_QUOTED_CHARS - 1 : MAX_QUOTED_CHARS;
  return `${escapedToOneLine(text.slice(0, end))}…`;
}

/** An error code as services write them (`not_found`, `invalid_request_error`); anything else is not one. */
const ERROR_CODE = /^[A-Za-z0-9_.:-]{1,100}$/;

export function isErrorCode(value: unknown): value is string {
  return typeof value === 'string' && ERROR_CODE.test(value);
}
