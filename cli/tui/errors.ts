/** A failed request as one line for the TUI's status line. */
import { SvcApiError } from '../../src/client/client.ts';

export function errorText(error: unknown): string {
  if (error instanceof SvcApiError) return `${error.message} (${error.code}, HTTP ${error.status})`;
  return error instanceof Error ? error.message : String(error);
}
