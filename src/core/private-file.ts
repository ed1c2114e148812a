/**
 * Files only svc's user may read, written whole: the data directory's, before they are linked into place (the owner
 * lock, the master key), and the evidence packets `svc runs` exports (the runs' prompts and answers).
 */
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * A name beside `path` that no other writer picks, `<path>.<pid>.<random>`: for a file written whole there before it
 * is linked or renamed to `path`.
 */
export function temporaryName(path: string): string {
  return `${path}.${process.pid}.${randomBytes(6).toString('hex')}`;
}

/**
 * Create `path` (which must not exist) with mode 0600 holding `text`. A write that fails once the file is created (a
 * full disk, a file size limit) removes it: else every failed start left a `svc.lock.<pid>.<random>` or
 * `master.key.<pid>.<random>` behind in the data directory, one more per restart of a service manager.
 */
export function writeNewPrivateFile(path: string, text: string): void {
  try {
    writeFileSync(path, text, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Not when the name was taken: that file is someone else's.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(path, { force: true });
    throw error;
  }
}

/**
 * Write `text` to `path` with mode 0600, replacing whatever is there. A file's mode applies only when it is created,
 * so writing into an existing one (a packet fetched with `curl -OJ`, mode 0644 by the umask) kept it readable to all,
 * and a symlink there (another user's, in a shared directory) was written through to the file it names. A new file,
 * created beside it and renamed over it, replaces either: the name then is this file's, never half written.
 */
export function replaceWithPrivateFile(path: string, text: string): void {
  const temp = temporaryName(join(dirname(path), `.${basename(path)}`));
  writeNewPrivateFile(temp, text);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
