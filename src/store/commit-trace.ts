/**
 * `SVC_TRACE_COMMITS`: a diagnostic of the durability rule's window (a gateway request's ledger writes committed
 * within 20 ms of its answer, docs/gateway.md). Each deferred window's commit appends a line to the file,
 * `<milliseconds from the window's first write to its COMMIT> <timed|held> <exposed milliseconds|->` (`held`: a
 * checkpoint made it due and its commit waited for the checkpoint's flush; the third field: from its first write queued
 * while answers went out before their commit, `-` if every answer of it waited for this commit, see
 * `Store.answersWaitForCommit`). Written at once, not buffered: the trace is meant to survive the
 * crash it helps explain. The bench's crash section reads it (docs/performance.md).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import type { CommittedWindow } from './store.ts';

export function commitTraceWriter(path: string): { note(window: CommittedWindow): void; close(): void } {
  let fd: number | null;
  try {
    fd = openSync(path, 'a', 0o600);
  } catch (error) {
    throw new Error(`SVC_TRACE_COMMITS: cannot open ${path} for appending (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  return {
    note(window) {
      if (fd === null) return;
      try {
        const exposed = window.exposedMs === null ? '-' : window.exposedMs.toFixed(2);
        writeSync(fd, `${window.lengthMs.toFixed(2)} ${window.heldByCheckpoint ? 'held' : 'timed'} ${exposed}\n`);
      } catch {
        // A diagnostic must never fail a commit: the trace stops here.
        closeSync(fd);
        fd = null;
      }
    },
    close() {
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
