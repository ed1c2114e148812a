/**
 * Cleanups that must run however a test process ends. `t.after` does not run for a test cut off at its timeout (the
 * runner ends the file's process with SIGTERM) or for a file ended by a signal (Ctrl-C on `node test/run.mjs`, its
 * file timeout): without this, their tmux servers (test/support/tmux.ts) kept running and their temp directories
 * (`tempDir`) stayed in /tmp.
 */
const cleanups = new Set<() => void>();
const ENDING_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
let installed = false;

/** Run every cleanup still registered, newest first (as `t.after` hooks run); each must be synchronous. */
function runCleanups(): void {
  for (const cleanup of [...cleanups].reverse()) {
    cleanups.delete(cleanup);
    try {
      cleanup();
    } catch {
      // Best effort: the rest still run.
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.on('exit', runCleanups);
  for (const signal of ENDING_SIGNALS) {
    // Once: then the process dies by the signal as it would have, so its parent sees the same end.
    process.once(signal, () => {
      runCleanups();
      process.kill(process.pid, signal);
    });
  }
}

/** Register `cleanup` to run when the process ends (exit or an ending signal); the returned function unregisters it. */
export function onProcessEnd(cleanup: () => void): () => void {
  install();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}
