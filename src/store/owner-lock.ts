/**
 * Exactly one process owns a data directory at a time (DESIGN.md section 4). The owner writes
 * `<dataDir>/svc.lock` holding its pid and, for `svc serve`, the path of its local socket. A lock whose pid is
 * no longer alive was left by a killed process and is taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const OWNER_LOCK_FILE = 'svc.lock';

export interface OwnerRecord {
  pid: number;
  /** Local socket of a running `svc serve`; null for a short-lived CLI command. */
  socketPath: string | null;
  startedAt: number;
}

export interface OwnerLock {
  readonly record: OwnerRecord;
  release(): void;
}

export class DataDirLockedError extends Error {
  constructor(readonly owner: OwnerRecord) {
    super(`the data directory is in use by process ${owner.pid}`);
    this.name = 'DataDirLockedError';
  }
}

export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The current owner of a data directory if it is alive, else null. */
export function readLiveOwner(dataDir: string): OwnerRecord | null {
  let record: OwnerRecord;
  try {
    record = JSON.parse(readFileSync(join(dataDir, OWNER_LOCK_FILE), 'utf8')) as OwnerRecord;
  } catch {
    return null;
  }
  if (record.pid === process.pid) return record;
  return isProcessAlive(record.pid) ? record : null;
}

/** Take ownership of a data directory, taking over a stale lock; throws DataDirLockedError if a live owner holds it. */
export function acquireOwnerLock(dataDir: string, socketPath: string | null): OwnerLock {
  const path = join(dataDir, OWNER_LOCK_FILE);
  const record: OwnerRecord = { pid: process.pid, socketPath, startedAt: Date.now() };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, JSON.stringify(record));
      closeSync(fd);
      let released = false;
      return {
        record,
        release() {
          if (released) return;
          released = true;
          try {
            const current = JSON.parse(readFileSync(path, 'utf8')) as OwnerRecord;
            if (current.pid === process.pid) rmSync(path, { force: true });
          } catch {
            // already gone
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = readLiveOwner(dataDir);
      if (owner) throw new DataDirLockedError(owner);
      rmSync(path, { force: true }); // stale: its owner is dead
    }
  }
  throw new Error(`could not take the lock ${path}`);
}
