/** A failed request as one line for the TUI's status line. */
import { SvcApiError } from '../../src/client/client.ts';
import { terminalLine } from '../terminal-text.ts';

/** The message may come from the server (or from whatever `--url` names): made safe for the terminal. */
export function errorText(error: unknown): string {
  if (error instanceof SvcApiError) return terminalLine(`${error.message} (${error.code}, HTTP ${error.status})`);
  return terminalLine(error instanceof Error ? error.message : String(error));
}
