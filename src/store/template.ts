/**
 * A new data file can start as a copy of a template instead of running every migration statement: on the first start
 * of `svc serve` that is ~50 ms less (the DDL of each migration, in SQLite compiled to WebAssembly, on a cold engine).
 *
 * The migrations stay the only source of the schema. The template is the file they produce: `npm run build` writes it
 * beside the bundle by opening a store with the migrations on an empty directory (src/store/write-template.ts). Its
 * name carries a hash of every migration (version, name, SQL), so a data file only ever starts from a template of
 * exactly the migrations the running code has; with any other list (another build, a test's own migrations, running
 * from source) there is no such file and the migrations run as before. Opening the copy then finds every migration
 * recorded.
 */
import { createHash } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { dataDirFailure } from './data-dir.ts';
import { flushNow } from './file-sync.ts';
import type { Migration } from './migrations.ts';

/** `schema-<hash>.db`: the template of exactly these migrations. */
export function templateFileName(migrations: readonly Migration[]): string {
  const hash = createHash('sha256');
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    hash.update(JSON.stringify([migration.version, migration.name, migration.sql]));
  }
  return `schema-${hash.digest('hex').slice(0, 16)}.db`;
}

/**
 * Create `filePath` (which must not exist) as a copy of the template of `migrations` in `templateDir`, if there is one.
 * The copy is flushed and renamed into place, and the directory flushed, before the store opens it: commits append to
 * the write-ahead log, whose flushes cover the log only, so the pages they build on must already be on the disk.
 * Whatever is at the copy's name (a copy cut by a crash, a symlink) is removed and the copy made as a new file: a
 * symlink there was written through, the file it named (another user's) chmodded 0600 and holding svc's data, and
 * then renamed into place as the data file.
 */
export function createFromTemplate(filePath: string, templateDir: string, migrations: readonly Migration[]): boolean {
  const template = join(templateDir, templateFileName(migrations));
  if (!existsSync(template)) return false;
  const partial = `${filePath}.template`;
  try {
    rmSync(partial, { force: true });
    copyFileSync(template, partial, constants.COPYFILE_EXCL);
    chmodSync(partial, 0o600); // as SQLite creates a data file
    flushNow(partial);
    renameSync(partial, filePath);
  } catch (error) {
    rmSync(partial, { force: true });
    throw dataDirFailure(error, `cannot create the data file ${filePath}`);
  }
  flushNow(dirname(filePath));
  return true;
}
