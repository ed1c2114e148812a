// A test file's process as test/run.mjs runs it, ended with everything it started however it ends. Plain JavaScript, as
// run.mjs runs without tsx. A file's own cleanups (test/support/process-end.ts) stop its svc processes and remove its
// temp directories when it ends by a signal it can catch; a file killed by SIGKILL (the runner's last resort for a hung
// file, the OOM killer) or crashed past them ran none, and its `svc serve`s went on holding their ports and CPU, slowing
// every later file on a 2-core CI machine, its directories left in /tmp. So each file runs in a session, and so a
// process group, of its own, with a temp directory of its own as TMPDIR; once its process has ended, whatever is left
// in its group is killed, its tmux servers (daemons, in sessions of their own: test/support/tmux-sockets.mjs) ended,
// and its temp directory removed.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { endTmuxServersNamed, SOCKET_PREFIX_VARIABLE } from './tmux-sockets.mjs';

/** How long a file's processes have after the runner's SIGTERM or SIGINT before it kills them. */
export const END_GRACE_MS = 10_000;

/** Send `signal` to the process group `pgid`; nothing when the group has no process left. */
export function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    if (error.code !== 'ESRCH') throw error;
  }
}

/**
 * Start a test file's process, `argv`, in `cwd` with `env`, its temp directory `tempDir` (created; its TMPDIR, so that
 * os.tmpdir() and what mkdtemp makes there are in it) and `tmuxPrefix` as the start of its terminals' socket names.
 * `ended` resolves with its output, exit code and signal once it and everything it left are gone; `end(signal)` asks
 * it, and all it started, to end, and kills them END_GRACE_MS later if they have not.
 */
export function startFileProcess({ argv, cwd, env, tempDir, tmuxPrefix }) {
  mkdirSync(tempDir, { recursive: true });
  const child = spawn(argv[0], argv.slice(1), {
    cwd,
    env: { ...env, TMPDIR: tempDir, [SOCKET_PREFIX_VARIABLE]: tmuxPrefix },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A session of its own (setsid), whose id is the child's pid: one signal reaches every process the file starts,
    // however deep, except those that leave it themselves (tmux's server, playwright's browser, ended by their owners).
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  let killer;
  // No pid: the process never started, nor anything of its.
  const killGroup = () => child.pid && signalGroup(child.pid, 'SIGKILL');
  // At its exit, not its close: a process left in the group holding the file's stdout would hold off the close.
  child.on('exit', killGroup);
  const ended = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      killGroup();
      endTmuxServersNamed(tmuxPrefix);
      rmSync(tempDir, { recursive: true, force: true });
      resolve({ output, code, signal });
    });
  });
  return {
    ended,
    /** Add a line of the runner's own to the file's output. */
    note: (text) => (output += text),
    end(signal) {
      if (child.pid) signalGroup(child.pid, signal);
      killer ??= setTimeout(killGroup, END_GRACE_MS);
    },
  };
}
