/** A failed request as one line for the TUI's status line. */
import { terminalLine } from '../terminal-text.ts';

/**
 * The message may come from the server (or from whatever `--url` names): made safe for the terminal. An SvcApiError's
 * message already names the call, its status and code.
 */
export function errorText(error: unknown): string {
  return terminalLine(error instanceof Error ? error.message : String(error));
}
