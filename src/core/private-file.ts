/**
 * A new file only svc's user may read, for the data directory's files written whole before they are linked into
 * place (the owner lock, the master key).
 */
import { rmSync, writeFileSync } from 'node:fs';

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
