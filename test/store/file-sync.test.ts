/** The store's own flushes (src/store/file-sync.ts), on a real file in a temporary directory. */
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
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


test("the directory's flush is tried again until one succeeds, and not after that", async (t) => {
  const root = tempDir(t);
  const directory = join(root, 'data');
  const moved = join(root, 'moved');
  mkdirSync(directory);
  const path = join(directory, 'svc.db');
  writeFileSync(path, 'pages');
  const sync = new FileSync(path);
  t.after(() => sync.close());
  // The flush opens the file at once (its descriptor flushes it wherever it is), then, after the file's flush, its
  // directory by name: gone meanwhile, that flush fails.
  const first = sync.sync();
  renameSync(directory, moved);
  await assert.rejects(first, { code: 'ENOENT' });
  // Still gone: the next flush tries the directory again.
  await assert.rejects(sync.sync(), { code: 'ENOENT' });
  // Back in place: the next flush flushes the directory too, and succeeds.
  renameSync(moved, directory);
  await sync.sync();
  // Flushed once: later flushes no longer open the directory, so its name being gone again changes nothing.
  renameSync(directory, moved);
  await sync.sync();
});
