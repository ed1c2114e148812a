/**
 * Why SQLite could not write the data file or its log. node-sqlite3-wasm's file layer answers every failed write
 * with SQLITE_IOERR_WRITE and drops node's errno, so a full disk or a file size limit met at the first write of the
 * log (`svc.db-wal`) reached the operator as the bare line `svc: disk I/O error` (and one met by a later commit of an
 * in-process admin command as `HTTP 500 internal`: the store's commit explains it too). When SQLite says that, the two
 * causes the errno would have named are looked for directly: the room left on the data file's file system, and the
 * process's file size limit (RLIMIT_FSIZE; read from /proc/self/limits, so on Linux only). Neither found, SQLite's
 * words are kept, with the file named. Only a failure pays for the look.
 */
import { readFileSync, statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { failureInWords } from './data-dir.ts';

/** The most one write of the engine takes: a log frame of its largest page (64 KiB) with the frame's 24-byte header. */
const ENGINE_WRITE_MAX_BYTES = 65_536 + 24;

/** A read or write of the data file that failed, said with the file named (and the cause, where it was found). */
export class DataFileIoError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'DataFileIoError';
  }
}

/**
 * `error` with the data file `filePath` named and, where found, the cause and what to do, when it is SQLite's
 * "disk I/O error"; else `error` itself. Call it before the file is closed: closing removes the log, giving back the
 * room the failed write found missing.
 */
export function explainIoFailure(filePath: string, error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof DataFileIoError || !/disk I\/O error/i.test(error.message)) return error;
  const cause = ioFailureCause(filePath);
  const words = cause === null ? null : failureInWords(cause);
  return words === null
    ? new DataFileIoError(`SQLite could not read or write the data file ${filePath}: ${error.message}`, error)
    : new DataFileIoError(`cannot write the data file ${filePath}: ${words}`, error);
}

/** The errno a write of the data file or its log would have failed with, by what is found now; null if none explains it. */
function ioFailureCause(filePath: string): 'ENOSPC' | 'EFBIG' | null {
  // Less room than one write takes: on a file system that full no commit can go through.
  if (roomLeft(dirname(filePath)) < ENGINE_WRITE_MAX_BYTES) return 'ENOSPC';
  // A file size limit within one write of the larger file: the log's next frame, or a checkpoint's last page of the
  // data file, passes it (node ignores SIGXFSZ, so the write fails with EFBIG instead of killing the process).
  const limit = fileSizeLimit();
  if (limit !== null && limit < Math.max(fileSize(filePath), fileSize(`${filePath}-wal`)) + ENGINE_WRITE_MAX_BYTES) return 'EFBIG';
  return null;
}

/** Bytes this process may still write on the file system of `dir` (root may use the blocks kept for it); Infinity if unknown. */
function roomLeft(dir: string): number {
  try {
    const stats = statfsSync(dir);
    return (process.getuid?.() === 0 ? stats.bfree : stats.bavail) * stats.bsize;
  } catch {
    return Infinity;
  }
}

/** The soft RLIMIT_FSIZE of this process in bytes; null when there is none or it cannot be read (not Linux). */
function fileSizeLimit(): number | null {
  try {
    const limit = /^Max file size\s+(\d+)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
    return limit === undefined ? null : Number(limit);
  } catch {
    return null;
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
