/** The store's own flushes (src/store/file-sync.ts), on a real file in a temporary directory. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileSync } from '../../src/store/file-sync.ts';
import { tempDir } from '../support/process.ts';

test('a file that does not exist yet has nothing to flush; once created it is flushed, with its directory the first time', async (t) => {
  const path = join(tempDir(t), 'svc.db-wal');
  const sync = new FileSync(path);
  t.after(() => sync.close());
  await sync.sync();
  writeFileSync(path, 'frames');
  // The first flush also opens and flushes the directory (an error there would reject it), later ones only the file.
  await sync.sync();
  writeFileSync(path, 'more frames');
  await sync.sync();
});

