/**
 * Writes the template of a new data file (src/store/template.ts) into a directory: the file the migrations produce,
 * made by opening a store on an empty directory, so through the same code as any data file. `npm run build` runs it
 * for dist/ (bin/build.mjs); never at run time.
 */
import { chmodSync, copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS, type Migration } from './migrations.ts';
import { DATA_FILE_NAME, openStore } from './store.ts';
import { templateFileName } from './template.ts';

/** Write the template of `migrations` into `dir`, removing templates of other migrations there; returns its path. */
export async function writeTemplate(dir: string, migrations: readonly Migration[] = MIGRATIONS): Promise<string> {
  const name = templateFileName(migrations);
  const scratch = mkdtempSync(join(tmpdir(), 'svc-template-'));
  try {
    // Closing checkpoints the log into the data file and removes it: the file alone is the whole database.
    await openStore({ dataDir: scratch, migrations, templateDir: null }).close();
    for (const stale of readdirSync(dir).filter((file) => /^schema-[0-9a-f]+\.db$/.test(file) && file !== name)) {
      rmSync(join(dir, stale), { force: true });
    }
    copyFileSync(join(scratch, DATA_FILE_NAME), join(dir, name));
    // Readable by whoever runs the build's output (SQLite created the file private); it holds no data, only schema.
    chmodSync(join(dir, name), 0o644);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return join(dir, name);
}
