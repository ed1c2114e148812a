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

test('a flush may run on the event loop once the first flush has ended, and not for a while after two there in a row were slow', async (t) => {
  const path = join(tempDir(t), 'svc.db');
  writeFileSync(path, 'pages');
  // A limit no flush can keep: each flush on the loop is a slow one.
  const sync = new FileSync(path, 1e-6);
  t.after(() => sync.close());
  assert.equal(sync.mayFlushOnLoop(), false, 'before the first flush, with its directory, has ended');
  assert.throws(() => sync.syncNow(), /first flush/);
  await sync.sync();
  assert.equal(sync.mayFlushOnLoop(), true);
  sync.syncNow();
  // One slow flush is not a slow disk.
  assert.equal(sync.mayFlushOnLoop(), true);
  sync.syncNow();
  // Two in a row: the next 64 asks are refused, then the loop is tried again.
  for (let ask = 0; ask < 64; ask++) assert.equal(sync.mayFlushOnLoop(), false, `ask ${ask + 1} after the slow flush`);
  assert.equal(sync.mayFlushOnLoop(), true);
});

test('with a limit of 0 no flush runs on the event loop; with a generous one they keep running there', async (t) => {
  const path = join(tempDir(t), 'svc.db');
  writeFileSync(path, 'pages');
  const never = new FileSync(path, 0);
  const quick = new FileSync(path, 10_000);
  t.after(() => [never, quick].forEach((sync) => sync.close()));
  await Promise.all([never.sync(), quick.sync()]);
  assert.equal(never.mayFlushOnLoop(), false);
  for (let flush = 0; flush < 3; flush++) {
    assert.equal(quick.mayFlushOnLoop(), true);
    writeFileSync(path, `pages ${flush}`);
    quick.syncNow();
  }
});

test('a file that cannot be opened (too many open files, a directory by its name) fails its flush, as a promise, not a throw', async (t) => {
  // The store starts a log flush after a COMMIT and one in a timer for commits nobody waits on: a throw there escaped
  // the commit (its drain rejected unhandled, which ends svc serve) or the timer (an uncaught exception).
  const path = join(tempDir(t), 'svc.db-wal');
  mkdirSync(path);
  const sync = new FileSync(path);
  t.after(() => sync.close());
  let flushed: Promise<void> | undefined;
  assert.doesNotThrow(() => (flushed = sync.sync()));
  await assert.rejects(flushed!, { code: 'EISDIR' });
});
