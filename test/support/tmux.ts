/**
 * A real terminal for end-to-end tests: the bundled executable in a detached tmux session, read with `capture-pane`
 * and driven with `send-keys`. CI installs tmux (.ci/run); without it the tests that need one are skipped, saying so.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { TestContext } from 'node:test';
import { loadScaled } from './load-scaled.ts';
import { onProcessEnd } from './process-end.ts';
import { ROOT, SVC } from './process.ts';
import { endTmuxServer, newTmuxSocketName } from './tmux-sockets.mjs';

export { tmuxSocketPath } from './tmux-sockets.mjs';

export const hasTmux = (() => {
  try {
    execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** The `skip` option of a test that needs tmux. */
export const skipWithoutTmux = hasTmux ? false : 'tmux is not installed (.ci/run installs it); the end-to-end terminal tests need it';

/** How long `until` waits on an idle machine; longer under load (a CLI child's scrypt and start take seconds there). */
const WAIT_MS = 20_000;

/** A private tmux server (its own socket name), killed after the test with everything running in it, its socket file removed. */
export function terminal(t: TestContext, size: { columns: number; rows: number } = { columns: 160, rows: 40 }) {
  const socket = newTmuxSocketName();
  const tmux = (...args: string[]) =>
    execFileSync('tmux', ['-L', socket, ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, TERM: 'xterm-256color' } });
  const killServer = () => endTmuxServer(socket);
  // Also when the test never reaches its after hooks (a timeout, a signal): the server would outlive the process. A
  // SIGKILL runs neither: test/run.mjs ends the servers of a file whose process ended (tmux-sockets.mjs).
  const forget = onProcessEnd(killServer);
  t.after(() => {
    forget();
    killServer();
  });
  const session = 'runs';
  const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
  return {
    /** The tmux server's socket name (`tmux -L <socket>`). */
    socket,
    /**
     * Run `svc <args>` in the session. `exec` keeps the pane's pid the command's; Ink draws nothing live under CI=true.
     * With `showExit`, the pane stays after the command ends, showing `exit=<code>`. `env` sets variables for it
     * (null unsets one); NO_COLOR=1 unless it says otherwise. With `stdoutPiped`, its stdout goes through `| cat`
     * (`svc keys revoke X | cat`): stdin and stderr stay the terminal; the pane's pid is then the shell's.
     */
    open(args: string[], options: { showExit?: boolean; stdoutPiped?: boolean; env?: Record<string, string | null> } = {}) {
      const entries = Object.entries({ NO_COLOR: '1', ...options.env });
      // env(1) takes its -u options before the first assignment.
      const env = [
        ...entries.filter(([, value]) => value === null).map(([name]) => `-u ${name}`),
        ...entries.flatMap(([name, value]) => (value === null ? [] : [quote(`${name}=${value}`)])),
      ].join(' ');
      const svc = `env -u CI -u CONTINUOUS_INTEGRATION ${env} ${quote(process.execPath)} ${quote(SVC)} ${args.map(quote).join(' ')}`;
      const run = options.stdoutPiped ? `${svc} | cat` : svc;
      const command = options.showExit ? `${run}; echo "exit=$?"; sleep 600` : options.stdoutPiped ? run : `exec ${svc}`;
      tmux('new-session', '-d', '-s', session, '-x', String(size.columns), '-y', String(size.rows), command);
    },
    screen: () => {
      try {
        return tmux('capture-pane', '-p', '-t', session);
      } catch {
        return '';
      }
    },
    /** The screen with its colours and attributes, as SGR escape sequences (`\u001b[33m`). */
    styledScreen: () => tmux('capture-pane', '-p', '-e', '-t', session),
    /** The window title the program set (OSC 0/2), as tmux keeps it. */
    title: () => tmux('display-message', '-p', '-t', session, '#{pane_title}').trim(),
    keys: (...keys: string[]) => tmux('send-keys', '-t', session, ...keys),
    /** Resize the terminal, as a user dragging its window does (the program gets SIGWINCH). */
    resize: (columns: number, rows: number) => tmux('resize-window', '-t', session, '-x', String(columns), '-y', String(rows)),
    /** Type `text` as it is (no key names). */
    type: (text: string) => tmux('send-keys', '-t', session, '-l', text),
    pid: () => Number(tmux('display-message', '-p', '-t', session, '#{pane_pid}').trim()),
    /** Whether the terminal shows its alternate screen (a full-screen program's, left when it ends). */
    alternateScreen: () => tmux('display-message', '-p', '-t', session, '#{alternate_on}').trim() === '1',
    alive: () => {
      try {
        tmux('has-session', '-t', session);
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * Poll `probe` until `ok` holds (20 s at most, up to 4 times that when the load average passes the CPUs: CI saw a
 * `svc users create` at production scrypt cost outlast 20 s at a load of 24 on 2 cores); fail showing `show()` (the
 * screen) otherwise.
 */
export async function until<T>(probe: () => T, ok: (value: T) => boolean, what: string, show: () => string): Promise<T> {
  const deadline = Date.now() + loadScaled(WAIT_MS);
  for (;;) {
    const value = probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}; screen:\n${show()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
