// The tmux servers of test/support/tmux.ts by their socket names, for the terminals' own cleanups and for test/run.mjs.
// Plain JavaScript, as run.mjs runs without tsx. A terminal's server is a daemon of its own: a test file killed by
// SIGKILL (the runner's last resort for a hung file, the OOM killer, kill -9) runs none of its cleanups, and its tmux
// servers, with the TUIs in them, kept running. So the runner gives each file a start of its terminals' socket names
// (the file runs in a process node --test starts, whose pid the runner does not know) and ends the servers whose
// names start with it once the file's process has ended.
import { spawnSync } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The variable by which test/run.mjs gives a file the start of its terminals' socket names. */
export const SOCKET_PREFIX_VARIABLE = 'SVC_TEST_TMUX_PREFIX';

/** Where tmux puts the socket of `tmux -L <name>`: $TMUX_TMPDIR, else /tmp, then tmux-<uid>. */
const socketDir = () => join(process.env.TMUX_TMPDIR || '/tmp', `tmux-${process.getuid()}`);

/**
 * The socket file of `tmux -L <name>`. tmux 3.3 leaves it when its server ends (kill-server included), so each test
 * left one: ~2,000 had piled up in /tmp/tmux-0.
 */
export const tmuxSocketPath = (name) => join(socketDir(), name);

/**
 * The start of the socket names of the `index`th file a runner runs: `svc-test-<runner pid>.<index>-`, which no other
 * file's names start with (the dash ends the index) and no name a terminal makes outside the runner does (no dot).
 */
export const fileSocketPrefix = (runnerPid, index) => `svc-test-${runnerPid}.${index}-`;

/** A new socket name for a terminal of this process, starting with what the runner gave its file. */
export const newTmuxSocketName = () => `${process.env[SOCKET_PREFIX_VARIABLE] ?? 'svc-test-'}${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

/** Kill the tmux server of socket `name` with everything running in it, and remove its socket file. */
export function endTmuxServer(name) {
  // Fails when the server is already gone with its last session: nothing to kill then.
  spawnSync('tmux', ['-L', name, 'kill-server'], { stdio: 'ignore' });
  rmSync(tmuxSocketPath(name), { force: true });
}

/** End the tmux servers whose socket names start with `prefix`: one directory read when there are none. */
export function endTmuxServersNamed(prefix) {
  let names;
  try {
    names = readdirSync(socketDir());
  } catch {
    return; // no tmux server was ever started
  }
  for (const name of names) if (name.startsWith(prefix)) endTmuxServer(name);
}
