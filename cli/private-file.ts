/**
 * A file only its owner may read, written whole: the evidence packets `svc runs` exports hold the runs' prompts and
 * answers.
 */
import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/**
 * Write `text` to `path` with mode 0600, replacing whatever is there. A file's mode applies only when it is created,
 * so writing into an existing one (a packet fetched with `curl -OJ`, mode 0644 by the umask) kept it readable to all,
 * and a symlink there (another user's, in a shared directory) was written through to the file it names. A new file,
 * created beside it and renamed over it, replaces either: the name then is this file's, never half written.
 */
export function writePrivateFile(path: string, text: string): void {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}`);
  try {
    writeFileSync(temp, text, { mode: 0o600, flag: 'wx' });
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}
