/** The store's flush thread (src/store/flush-thread.ts), on real files in a temporary directory. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { FlushThread } from '../../src/store/flush-thread.ts';
import { ROOT, tempDir } from '../support/process.ts';

function openFile(t: test.TestContext, name: string): number {
  const path = join(tempDir(t), name);
  writeFileSync(path, 'pages');
  const fd = openSync(path, 'r+');
  t.after(() => closeSync(fd));
  return fd;
}

test('a flush the thread finished is seen by poll(), without a turn of the event loop', async (t) => {
  const thread = new FlushThread(2);
  t.after(() => thread.close());
  const fd = openFile(t, 'svc.db-wal');
  // The first flush starts the thread; its message settles it through the event loop.
  await thread.flush(0, fd);
  let settled = false;
  void thread.flush(0, fd).then(() => (settled = true));
  // Only microtasks from here on: no timer, no I/O callback, no message from the thread can run meanwhile.
  const until = performance.now() + 5_000;
  while (!settled && performance.now() < until) {
    thread.poll();
    await Promise.resolve();
  }
  assert.equal(settled, true, 'poll() settled the flush while the event loop was held');
});

test('flushes of two files are told apart, and many requested at once all settle', async (t) => {
  const thread = new FlushThread(2);
  t.after(() => thread.close());
  const log = openFile(t, 'svc.db-wal');
  const main = openFile(t, 'svc.db');
  await Promise.all(Array.from({ length: 50 }, (_, i) => thread.flush(i % 2, i % 2 === 0 ? log : main)));
});

test("a failed flush fails its file for good (its pages may be gone), and not the other file", async (t) => {
  const thread = new FlushThread(2);
  t.after(() => thread.close());
  const log = openFile(t, 'svc.db-wal');
  const main = openFile(t, 'svc.db');
  // A descriptor that is not open: fdatasync fails with EBADF.
  await assert.rejects(thread.flush(1, 1_000_000), { code: 'EBADF', syscall: 'fdatasync' });
  // Later flushes of that file fail too, even of a good descriptor: a flush that succeeds after a failed one would
  // vouch for pages the kernel may have dropped.
  await assert.rejects(thread.flush(1, main), { code: 'EBADF' });
  await thread.flush(0, log);
});

test('once closed, pending and new flushes are refused', async (t) => {
  const thread = new FlushThread(1);
  const fd = openFile(t, 'svc.db');
  await thread.flush(0, fd);
  await thread.close();
  await assert.rejects(thread.flush(0, fd), /closed/);
});

test('an idle thread does not keep the process alive', (t) => {
  const path = join(tempDir(t), 'svc.db');
  writeFileSync(path, 'pages');
  const script = `
    import { openSync } from 'node:fs';
    import { FlushThread } from ${JSON.stringify(pathToFileURL(join(ROOT, 'src/store/flush-thread.ts')).href)};
    const thread = new FlushThread(1);
    await thread.flush(0, openSync(${JSON.stringify(path)}, 'r+'));
    console.log('flushed');
  `;
  const result = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(result.signal, null, 'the process ended by itself');
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), 'flushed');
});
