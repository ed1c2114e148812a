/**
 * Mount the runs TUI full screen (the terminal's alternate screen, restored on exit) and resolve when the user
 * quits. Loaded by `svc runs` only when it opens the TUI, so other commands never load Ink, React or Yoga.
 */
import { constants } from 'node:os';
import { render } from 'ink';
import type { SvcClient } from '../../src/client/client.ts';
import type { ConnectionKind } from '../connection.ts';
import { colorWanted } from '../terminal-color.ts';
import { terminalLine } from '../terminal-text.ts';
import type { RunFilterInput } from './format.ts';
import type { ConnectionInfo } from './RunList.tsx';
import { RunsApp } from './RunsApp.tsx';
import { runsSource } from './runs-source.ts';

export interface StartOptions {
  client: SvcClient;
  kind: ConnectionKind;
  /**
   * What a failed read says on the screen, given the client's error: svc's 401 with the hint naming the token it
   * refused (cli/token-hint.ts). Passed in, not imported: this bundle (dist/tui.mjs) has its own copy of the client's
   * modules, whose SvcApiError is not the class of the errors `client` throws.
   */
  explainError: (error: unknown) => unknown;
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
  return { label: kind === 'socket' ? `${where} (local socket)` : where, live: true };
}

const ENTER_ALTERNATE_SCREEN = '\u001b[?1049h\u001b[H';
const LEAVE_ALTERNATE_SCREEN = '\u001b[?1049l';

/**
 * Signals that end the view from outside (kill, a closed terminal window). Left to their default (or to Ink's
 * signal-exit, which unmounts and dies again by the signal), they left the terminal on the alternate screen and an
 * in-process view's data directory to a dead owner; the view quits as with q instead and exits 128+signal.
 */
const ENDING_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT'];

export async function startRunsTui(options: StartOptions): Promise<void> {
  const source = runsSource(options.client, options.outDir, options.explainError);
  const color = colorWanted(process.env);
  process.stdout.write(ENTER_ALTERNATE_SCREEN);
  let endedBy: NodeJS.Signals | null = null;
  let app: ReturnType<typeof render> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    endedBy = signal;
    app?.unmount();
  };
  try {
    app = render(
      <RunsApp source={source} connection={connectionInfo(options.kind, options.where)} initialFilters={options.filters} limit={options.limit} color={color} />,
      { exitOnCtrlC: true },
    );
    // After Ink's own (signal-exit) listeners: seeing one more, signal-exit lets the process live. Once: a second
    // signal, should quitting hang, ends the process the default way.
    for (const signal of ENDING_SIGNALS) process.once(signal, onSignal);
    await app.waitUntilExit();
  } finally {
    for (const signal of ENDING_SIGNALS) process.off(signal, onSignal);
    process.stdout.write(LEAVE_ALTERNATE_SCREEN);
  }
  if (endedBy !== null) process.exitCode = 128 + constants.signals[endedBy];
}
