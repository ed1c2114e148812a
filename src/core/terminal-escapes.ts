/**
 * The one rule for text svc did not write that is shown where it could act (a terminal, a log read on one): text from a
 * server on the operator's terminal (cli/terminal-text.ts), a server's message the reference client puts into an Error
 * (src/client/server-text.ts), and `svc serve`'s log lines and the CLI's `--json` output, whose strings hold what
 * clients sent (a Host header, a name, a model).
 *
 * Unsafe are the control characters (C0, DEL, C1: an ESC starts sequences that retitle the window, clear the screen or
 * write the clipboard, and U+009B is a CSI, U+009D an OSC, on terminals that act on them; a CR overwrites the line) and
 * the invisible characters that reorder or break lines: the bidirectional marks, overrides and isolates (Unicode's
 * Bidi_Control: U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and U+2028/U+2029. Each is shown as its `\u`
 * escape, as JSON writes it (`\u001b`, `\u202e`).
 *
 * The other characters that show nothing (zero-width spaces and joiners, variation selectors, a soft hyphen) are shown
 * as they are: they move nothing and break no line, and text holds them rightly (an emoji sequence is joined by U+200D
 * and styled by U+FE0F, Persian writes U+200C inside words). Names that must read as what they are refuse them at
 * input instead (src/core/text.ts).
 */

/** Beside the controls: the invisible characters that reorder or break lines. */
const REORDER_OR_BREAK = String.raw`\p{Bidi_Control}\u2028\u2029`;

const UNSAFE = new RegExp(`[\\p{Cc}${REORDER_OR_BREAK}]`, 'gu');
const UNSAFE_BUT_TAB_AND_LINE_FEED = new RegExp(String.raw`[\u0000-\u0008\u000b-\u001f\u007f-\u009f${REORDER_OR_BREAK}]`, 'gu');
/** JSON.stringify escapes the C0 controls in strings itself; in JSON text they stand raw only as white space. */
const UNSAFE_BUT_C0 = new RegExp(String.raw`[\u007f-\u009f${REORDER_OR_BREAK}]`, 'gu');

const escaped = (char: string) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every unsafe character written as its `\u` escape, tab and line feed included: one line. */
export function escapedToOneLine(text: string): string {
  return text.replace(UNSAFE, escaped);
}

/** `text` with every unsafe character but tab and line feed written as its `\u` escape: text that may span lines. */
export function escapedKeepingLines(text: string): string {
  return text.replace(UNSAFE_BUT_TAB_AND_LINE_FEED, escaped);
}

/**
 * `json` (JSON text) with every unsafe character JSON.stringify leaves raw written as its `\u` escape. They can only
 * stand inside a string of JSON text, where a `\u` escape is the same character: escaped, the text is the same JSON
 * value.
 */
export function terminalSafeJson(json: string): string {
  // Nearly every log line is ASCII without DEL, which a UTF-8 length tells in a fraction of the pattern's scan (~75 ns
  // against ~370 ns for a request's log line): the log writes two lines per request.
  if (Buffer.byteLength(json) === json.length && !json.includes('\u007f')) return json;
  return json.replace(UNSAFE_BUT_C0, escaped);
}
