/**
 * Text from the server shown on an operator's terminal: names, models, e-mails, settings, trace payloads, error
 * messages. Any caller with an API key can put text into what the admin commands show (a trace event's tool name, a
 * run's payload), and `--url` may name a server that is not svc, so control characters never reach the terminal raw:
 * an ESC starts sequences that retitle the window, clear the screen, move the cursor over a verdict already printed
 * (the TUI's integrity badge) or write the clipboard (OSC 52); C1 controls do the same on terminals that take them;
 * a carriage return overwrites the line; bidirectional overrides reorder what is shown. They are shown escaped
 * instead, as JSON writes them (`\u001b`, `\u202e`), by the one rule of src/core/terminal-escapes.ts.
 */

import { escapedKeepingLines, escapedToOneLine, terminalSafeJson } from '../src/core/terminal-escapes.ts';

/** Text that may span lines (a message, a block the CLI prints); other controls escaped. */
export function terminalText(text: string): string {
  return escapedKeepingLines(text);
}

/**
 * Text that must stay on one line (a table cell, a line of the TUI): every control escaped, tab and line feed included,
 * by the rule the reference client quotes a server's text by.
 */
export function terminalLine(text: string): string {
  return escapedToOneLine(text);
}

/**
 * JSON for stdout (`--json`): the same value, with the characters JSON.stringify leaves raw written as `\u` escapes,
 * which they may be anywhere in JSON text (they can only stand inside its strings). Scripts parse the same data.
 */
export function terminalJson(value: unknown): string {
  return terminalSafeJson(JSON.stringify(value, null, 2));
}

/** A value from the server with every string in it, keys included, made safe for one line (the TUI's data). */
export function terminalSafe<T>(value: T): T {
  if (typeof value === 'string') return terminalLine(value) as T;
  if (Array.isArray(value)) return value.map((item) => terminalSafe(item)) as T;
  if (typeof value === 'object' && value !== null) {
    const safe: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) safe[terminalLine(key)] = terminalSafe(item);
    return safe as T;
  }
  return value;
}
