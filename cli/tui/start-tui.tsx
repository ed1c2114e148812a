/**
 * Mount the runs TUI full screen (the terminal's alternate screen, restored on exit) and resolve when the user
 * quits. Loaded by `svc runs` only when it opens the TUI, so other commands never load Ink, React or Yoga.
 */
import { render } from 'ink';
import type { SvcClient } from '../../src/client/client.ts';
import type { ConnectionKind } from '../connection.ts';
import { terminalLine } from '../terminal-text.ts';
import type { RunFilterInput } from './format.ts';
import type { ConnectionInfo } from './RunList.tsx';
import { RunsApp } from './RunsApp.tsx';
import { runsSource } from './runs-source.ts';

export interface StartOptions {
  client: SvcClient;
  kind: ConnectionKind;
  /** Where the data is: the URL or the data directory, for the header. */
  where: string;
  filters: RunFilterInput;
  limit: number;
  outDir: string;
}

/**
 * What the header says about the connection; only a view of a data directory someone else owns can update live. The
 * URL or directory is shown escaped (terminal-text.ts): SVC_BASE_URL or a directory name may hold control characters.
 */
export function connectionInfo(kind: ConnectionKind, raw: string): ConnectionInfo {
  const where = terminalLine(raw);
  if (kind === 'in-process') {
    return {
      label: `data directory ${where} (in-process)`,
      live: false,
      notice: 'not live: live updates need svc serve (this view holds the data directory)',
    };
  }
  return { label: kind === 'socket' ? `live · ${where} (local socket)` : `live · ${where}`, live: true };
}

const ENTER_ALTERNATE_SCREEN = '\u001b[?1049h\u001b[H';
const LEAVE_ALTERNATE_SCREEN = '\u001b[?1049l';

export async function startRunsTui(options: StartOptions): Promise<void> {
  const source = runsSource(options.client, options.outDir);
  const color = !('NO_COLOR' in process.env);
  process.stdout.write(ENTER_ALTERNATE_SCREEN);
  try {
    const app = render(
      <RunsApp source={source} connection={connectionInfo(options.kind, options.where)} initialFilters={options.filters} limit={options.limit} color={color} />,
      { exitOnCtrlC: true },
    );
    await app.waitUntilExit();
  } finally {
    process.stdout.write(LEAVE_ALTERNATE_SCREEN);
  }
}
