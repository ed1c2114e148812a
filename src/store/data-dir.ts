/**
 * The data directory holds the data file (password hashes, runs, prompts), the master key and the local socket
 * whose caller is a platform admin. It must be private to the user svc runs as: created 0700, and an existing one
 * refused when another user owns it or may write into it. mkdir leaves an existing directory as it is, so without
 * this check a directory squatted by another local user (in /tmp, say) is used as found: that user reads the data,
 * or replaces the socket with their own and receives the passwords and secrets admin commands send it.
 */
import { mkdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { noteForOperator } from '../core/operator-note.ts';

export class DataDirUnsafeError extends Error {
  constructor(dataDir: string, why: string, fix: string) {
    super(`the data directory ${dataDir} ${why}; svc keeps its data only in a directory private to its user: ${fix}`);
    this.name = 'DataDirUnsafeError';
  }
}

/**
 * Why a file system call in or for the data directory failed, by the error's code, in words (node's say `EACCES: ...`),
 * with what to do where that is not plain from them.
 */
const FAILURES: Record<string, string> = {
  ENOTDIR: 'a part of its path is a file, not a directory',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device; free some space on it',
  EDQUOT: 'the disk quota is used up; free some space or raise the quota',
  // A write past RLIMIT_FSIZE: node ignores SIGXFSZ, so the write fails instead of the process being killed.
  EFBIG: 'a file would pass the file size limit of the process (ulimit -f); raise the limit',
  ENAMETOOLONG: 'its path is too long',
  // Only from makeDirectory: a directory that exists (its parent) does not take a new one, as in /proc.
  ENOENT: 'its file system does not take new directories there',
};

/** Why a call failed with errno `code`, in words, with what to do; null for a code not in FAILURES. */
export function failureInWords(code: string): string | null {
  return Object.hasOwn(FAILURES, code) ? FAILURES[code]! : null;
}

/** `error` said in words, with the data directory named, when it is one of FAILURES; else `error` itself. */
export function dataDirFailure(error: unknown, what: string): unknown {
  const words = failureInWords((error as NodeJS.ErrnoException | null)?.code ?? '');
  return words === null ? error : new Error(`${what}: ${words}`);
}

/**
 * `mkdir -p` with mode 0700 for every directory it creates. Not node's `recursive: true`, which retries for ever, at
 * full CPU, when mkdir answers ENOENT though the parent exists (a path in /proc): here that ENOENT is thrown.
 */
function makeDirectory(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // EEXIST: there already (a file of that name fails its child's mkdir with ENOTDIR, or the caller's check).
    if (code === 'EEXIST') return;
    if (code !== 'ENOENT' || dir === dirname(dir)) throw error;
    makeDirectory(dirname(dir));
    mkdirSync(dir, { mode: 0o700 });
  }
}

/** Create the data directory (0700) if it does not exist; refuse one another user owns or may write into. */
export function ensurePrivateDataDir(dataDir: string): void {
  try {
    makeDirectory(dataDir);
  } catch (error) {
    throw dataDirFailure(error, `cannot create the data directory ${dataDir}`);
  }
  const stats = statSync(dataDir);
  if (!stats.isDirectory()) throw new DataDirUnsafeError(dataDir, 'is not a directory', 'use another --data-dir');
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid) {
    throw new DataDirUnsafeError(dataDir, `belongs to another user (uid ${stats.uid}, svc runs as uid ${uid})`, 'use a directory of your own');
  }
  if ((stats.mode & 0o022) !== 0) {
    const mode = (stats.mode & 0o777).toString(8).padStart(3, '0');
    throw new DataDirUnsafeError(dataDir, `may be written by other users (mode ${mode})`, `chmod 700 ${dataDir}`);
  }
}

/**
 * A warning, one line, when a directory above the data directory lets another user rename it away (and put their own
 * in its place, whose socket admin commands would trust): one writable by group or others without the sticky bit, or
 * owned by a user other than root and svc's. Null when every parent is safe. Not refused, unlike the directory itself:
 * a shared parent may be what the operator chose, with only trusted users in its group. The parents of the path as
 * given and of the one it resolves to (through symlinks) are both checked: either can be swapped. Call it once the data
 * directory exists.
 */
function parentExposure(dataDir: string): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  for (const parent of parentsOf(dataDir)) {
    const stats = statSync(parent, { throwIfNoEntry: false });
    if (stats === undefined) continue;
    const where = `warning: ${parent}, above the data directory ${dataDir},`;
    const risk = 'they can rename the data directory away and put one of theirs in its place';
    if (stats.uid !== 0 && stats.uid !== uid) {
      return `${where} belongs to another user (uid ${stats.uid}): ${risk}; use a data directory whose parents are root's or yours`;
    }
    if ((stats.mode & 0o022) !== 0 && (stats.mode & 0o1000) === 0) {
      const mode = (stats.mode & 0o777).toString(8).padStart(3, '0');
      return `${where} may be written by other users (mode ${mode}) and has no sticky bit: ${risk}; chmod go-w ${parent} (or chmod +t ${parent})`;
    }
  }
  return null;
}

/** Says parentExposure's warning, if any, on stderr: once, where svc serve and an admin command start on `dataDir`. */
export function warnOfExposedParents(dataDir: string): void {
  const exposure = parentExposure(dataDir);
  if (exposure !== null) noteForOperator(exposure);
}

/** The directories above `dataDir` (which exists), nearest first: of its absolute path, then of its real one. */
function parentsOf(dataDir: string): string[] {
  const parents = new Set<string>();
  for (const path of [resolve(dataDir), realpathSync(dataDir)]) {
    for (let dir = dirname(path); !parents.has(dir); dir = dirname(dir)) parents.add(dir);
  }
  return [...parents];
}

/**
 * The longest path a unix socket can have: `sun_path` holds 108 bytes on Linux, 104 on macOS, a NUL included.
 * Past it, listen() binds a cut path (outside the data directory) or fails.
 */
export const MAX_SOCKET_PATH_BYTES = process.platform === 'darwin' ? 103 : 107;
