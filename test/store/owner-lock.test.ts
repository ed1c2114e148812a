/** One owner per data directory: concurrent takers, stale takeover, no half-written lock files. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import test from 'node:test';
import { acquireOwnerLock, DataDirLockedError, OWNER_LOCK_FILE, readLiveOwner } from '../../src/store/owner-lock.ts';
import { ROOT, tempDir } from '../support/process.ts';

function contender(dataDir: string): Promise<string> {
  const script = `
    import { acquireOwnerLock } from './src/store/owner-lock.ts';
    try { const lock = acquireOwnerLock(${JSON.stringify(dataDir)}, null); console.log('won'); setTimeout(() => lock.release(), 1500); }
    catch (error) { console.log(error.name); }`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('close', () => resolve(out.trim()));
  });
}

test('of several processes taking the same lock at once, exactly one wins', async (t) => {
  const dataDir = tempDir(t);
  // A stale lock from a dead process makes every contender go through the takeover path too.
  writeFileSync(`${dataDir}/${OWNER_LOCK_FILE}`, JSON.stringify({ pid: 2 ** 22 + 12345, socketPath: null, startedAt: 1 }));
  const results = await Promise.all(Array.from({ length: 6 }, () => contender(dataDir)));
  assert.equal(results.filter((result) => result === 'won').length, 1, results.join(','));
  assert.ok(results.every((result) => result === 'won' || result === 'DataDirLockedError'), results.join(','));
  assert.deepEqual(
    readdirSync(dataDir).filter((name) => name !== OWNER_LOCK_FILE),
    [],
    'no temporary or moved-aside files are left',
  );
});

test('a live owner blocks; release frees; a dead owner is taken over', async (t) => {
  const dataDir = tempDir(t);
  const lock = acquireOwnerLock(dataDir, '/tmp/x.sock');
  assert.equal(readLiveOwner(dataDir)?.socketPath, '/tmp/x.sock');
  const other = await contender(dataDir);
  assert.equal(other, 'DataDirLockedError');
  lock.release();
  assert.equal(readLiveOwner(dataDir), null);
  writeFileSync(`${dataDir}/${OWNER_LOCK_FILE}`, JSON.stringify({ pid: 2 ** 22 + 54321, socketPath: null, startedAt: 1 }));
  const taken = acquireOwnerLock(dataDir, null);
  assert.equal(readLiveOwner(dataDir)?.pid, process.pid);
  taken.release();
  assert.throws(() => {
    const first = acquireOwnerLock(dataDir, null);
    try {
      acquireOwnerLock(dataDir, null);
    } finally {
      first.release();
    }
  }, (error: unknown) => error instanceof DataDirLockedError || (error as Error).message.includes('lock'));
});

test('a lock file that is not an owner record (null, a number, a pid that is no integer, garbage) is stale and taken over', (t) => {
  const dataDir = tempDir(t);
  for (const content of ['null', '42', '"x"', '[]', 'garbage', '{"pid":"1","socketPath":null,"startedAt":1}', `{"pid":${process.pid}}`]) {
    writeFileSync(`${dataDir}/${OWNER_LOCK_FILE}`, content);
    assert.equal(readLiveOwner(dataDir), null, content);
    const lock = acquireOwnerLock(dataDir, null);
    assert.equal(readLiveOwner(dataDir)?.pid, process.pid, content);
    lock.release();
  }
});

test("a lock naming this process's pid that it did not take (an earlier process had the pid) is stale and taken over", (t) => {
  const dataDir = tempDir(t);
  // A container's entrypoint gets the same pid at every start: after a kill -9 the restarted svc finds its own pid.
  writeFileSync(`${dataDir}/${OWNER_LOCK_FILE}`, JSON.stringify({ pid: process.pid, socketPath: `${dataDir}/svc.sock`, startedAt: 1 }));
  assert.equal(readLiveOwner(dataDir), null);
  const lock = acquireOwnerLock(dataDir, null);
  assert.equal(readLiveOwner(dataDir)?.startedAt, lock.record.startedAt, 'the lock it took is its own, and live');
  assert.throws(() => acquireOwnerLock(dataDir, null), DataDirLockedError);
  lock.release();
  assert.equal(readLiveOwner(dataDir), null);
});
