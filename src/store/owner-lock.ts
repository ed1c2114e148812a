/**
 * Exactly one process owns a data directory at a time (DESIGN.md section 4). The owner writes
 * `<dataDir>/svc.lock` holding its pid and, for `svc serve`, the path of its local socket. A lock whose pid is
 * no longer alive was left by a killed process and is taken over.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * Take ownership of a data directory, taking over a stale lock; throws DataDirLockedError if a live owner holds it.
 *
 * The record is written to a private temporary file first and hard-linked into place, so the lock file never exists
 * half-written (a reader seeing an empty file would take it for stale). A stale lock is moved aside by rename and
 * re-checked, so two processes taking over the same stale lock cannot delete each other's fresh one.
 */
export function acquireOwnerLock(dataDir: string, socketPath: string | null): OwnerLock {
  const path = join(dataDir, OWNER_LOCK_FILE);
  const record: OwnerRecord = { pid: process.pid, socketPath, startedAt: Date.now() };
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(temp, JSON.stringify(record), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        linkSync(temp, path);
        return ownerLock(path, record);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
        const owner = readLiveOwner(dataDir);
        if (owner) throw new DataDirLockedError(owner);
        takeOverStale(path);
      }
    }
    throw new Error(`could not take the lock ${path}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

function takeOverStale(path: string): void {
  const aside = `${path}.stale.${process.pid}.${randomBytes(6).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else moved it; retry the link
    throw error;
  }
  let moved: OwnerRecord | null = null;
  try {
    moved = JSON.parse(readFileSync(aside, 'utf8')) as OwnerRecord;
  } catch {
    // unreadable: a lock from a crashed writer of an older version; stale
  }
  if (moved && moved.pid !== process.pid && isProcessAlive(moved.pid)) {
    // Between our check and the rename a live process took the lock: put it back and report it.
    try {
      linkSync(aside, path);
    } finally {
      rmSync(aside, { force: true });
    }
    throw new DataDirLockedError(moved);
  }
  rmSync(aside, { force: true });
}

function ownerLock(path: string, record: OwnerRecord): OwnerLock {
  let released = false;
  return {
    record,
    release() {
      if (released) return;
      released = true;
      try {
        const current = JSON.parse(readFileSync(path, 'utf8')) as OwnerRecord;
        if (current.pid === process.pid && current.startedAt === record.startedAt) rmSync(path, { force: true });
      } catch {
        // already gone
      }
    },
  };
}
