/**
 * Exactly one process owns a data directory at a time (DESIGN.md section 4). The owner writes
 * `<dataDir>/svc.lock` holding its pid and, for `svc serve`, the path of its local socket. A lock whose pid is
 * no longer alive was left by a killed process and is taken over.
 */
import { linkSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { temporaryName, writeNewPrivateFile } from '../core/private-file.ts';
import { dataDirFailure } from './data-dir.ts';

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

/**
 * The locks this process holds: lock file path -> its record's `startedAt`. A lock naming this process's pid that is
 * not one of these was left by an earlier process that had the same pid (a container's entrypoint gets the same pid
 * at every start, so a restart after kill -9 sees its own pid in the lock): it is stale, not this process's own.
 */
const held = new Map<string, number>();

/** The current owner of a data directory if it is alive, else null. */
export function readLiveOwner(dataDir: string): OwnerRecord | null {
  let record: unknown;
  try {
    record = JSON.parse(readFileSync(join(dataDir, OWNER_LOCK_FILE), 'utf8'));
  } catch {
    return null;
  }
  // Anything but a record of ours (`null`, a number, a pid that is no integer) was not written by an owner: stale.
  if (!isOwnerRecord(record)) return null;
  if (record.pid === process.pid) return held.get(join(dataDir, OWNER_LOCK_FILE)) === record.startedAt ? record : null;
  return isProcessAlive(record.pid) ? record : null;
}

function isOwnerRecord(value: unknown): value is OwnerRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return Number.isInteger(record.pid) && (record.socketPath === null || typeof record.socketPath === 'string') && typeof record.startedAt === 'number';
}

/**
 * Take ownership of a data directory, taking over a stale lock; throws DataDirLockedError if a live owner holds it.
 *
 * The record is written to a private temporary file first and hard-linked into place, so the lock file never exists
 * half-written (a reader seeing an empty file would take it for stale). Removing a stale lock happens under a
 * takeover mutex (an exclusive `mkdir`), after re-reading the lock under it: the file can only appear by a link
 * when it is absent and only disappear under the mutex, so a contender can never remove a fresh lock another one
 * just took (moving the lock aside and back, as an earlier version did, let a third contender slip in between).
 */
export function acquireOwnerLock(dataDir: string, socketPath: string | null): OwnerLock {
  const path = join(dataDir, OWNER_LOCK_FILE);
  const record: OwnerRecord = { pid: process.pid, socketPath, startedAt: Date.now() };
  const temp = temporaryName(path);
  try {
    writeNewPrivateFile(temp, JSON.stringify(record));
  } catch (error) {
    throw dataDirFailure(error, `cannot write in the data directory ${dataDir}`);
  }
  try {
    for (let attempt = 0; attempt < TAKEOVER_ATTEMPTS; attempt++) {
      try {
        linkSync(temp, path);
        held.set(path, record.startedAt);
        return ownerLock(path, record);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw dataDirFailure(error, `cannot write in the data directory ${dataDir}`);
        const owner = readLiveOwner(dataDir);
        if (owner) throw new DataDirLockedError(owner);
        if (!removeStale(dataDir, path)) sleepSync(TAKEOVER_WAIT_MS);
      }
    }
    throw new Error(`could not take the lock ${path}`);
  } finally {
    rmSync(temp, { force: true });
  }
}

const TAKEOVER_ATTEMPTS = 400;
const TAKEOVER_WAIT_MS = 5;
/** A takeover mutex older than this was left by a process killed inside its few-microsecond critical section. */
const TAKEOVER_MUTEX_STALE_MS = 5_000;

/** Remove the lock file if, read under the takeover mutex, it still names a dead owner; false if the mutex is busy. */
function removeStale(dataDir: string, path: string): boolean {
  const mutex = `${path}.takeover`;
  try {
    mkdirSync(mutex);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    try {
      if (Date.now() - statSync(mutex).mtimeMs > TAKEOVER_MUTEX_STALE_MS) rmSync(mutex, { recursive: true, force: true });
    } catch {
      // removed meanwhile
    }
    return false;
  }
  try {
    const owner = readLiveOwner(dataDir);
    if (owner) throw new DataDirLockedError(owner);
    rmSync(path, { force: true });
    return true;
  } finally {
    rmSync(mutex, { recursive: true, force: true });
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function ownerLock(path: string, record: OwnerRecord): OwnerLock {
  let released = false;
  return {
    record,
    release() {
      if (released) return;
      released = true;
      held.delete(path);
      try {
        const current = JSON.parse(readFileSync(path, 'utf8')) as OwnerRecord;
        if (current.pid === process.pid && current.startedAt === record.startedAt) rmSync(path, { force: true });
      } catch {
        // already gone
      }
    },
  };
}
