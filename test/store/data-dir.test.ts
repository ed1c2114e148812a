/** The data directory is private to svc's user: created 0700; one another user owns or may write into is refused. */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { DataDirUnsafeError, dataDirFailure, ensurePrivateDataDir } from '../../src/store/data-dir.ts';
import { ensureBundle, runSvc, startServe, SVC, tempDir } from '../support/process.ts';

before(ensureBundle);

test('a new data directory is created 0700, parents included; an existing private one (0700, 0750, 0755) is used', (t) => {
  const parent = tempDir(t);
  const dataDir = join(parent, 'a', 'b');
  ensurePrivateDataDir(dataDir);
  assert.equal(statSync(dataDir).mode & 0o777, 0o700);
  for (const mode of [0o700, 0o750, 0o755]) {
    chmodSync(dataDir, mode);
    assert.doesNotThrow(() => ensurePrivateDataDir(dataDir));
  }
});

test('a data directory other users may write into, or that is not a directory, is refused', (t) => {
  const dataDir = join(tempDir(t), 'shared');
  mkdirSync(dataDir);
  for (const mode of [0o777, 0o770, 0o702, 0o1777]) {
    chmodSync(dataDir, mode);
    assert.throws(() => ensurePrivateDataDir(dataDir), (error: unknown) => error instanceof DataDirUnsafeError && /may be written by other users/.test(error.message));
  }
  const file = join(tempDir(t), 'file');
  writeFileSync(file, '');
  assert.throws(() => ensurePrivateDataDir(file), DataDirUnsafeError);
});

test('a data directory another user owns is refused', { skip: process.getuid?.() !== 0 && 'needs root to give a directory away' }, (t) => {
  const dataDir = join(tempDir(t), 'theirs');
  mkdirSync(dataDir, { mode: 0o700 });
  chownSync(dataDir, 65534, 65534);
  assert.throws(() => ensurePrivateDataDir(dataDir), /belongs to another user \(uid 65534/);
});

test('svc serve and the admin commands refuse a squatted data directory and touch nothing in it', async (t) => {
  const dataDir = join(tempDir(t), 'squatted');
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o777);
  for (const args of [['keys', 'list', '--data-dir', dataDir], ['serve', '--port', '0', '--data-dir', dataDir]]) {
    const result = await runSvc(args);
    assert.equal(result.code, 1, args.join(' '));
    assert.match(result.stderr, /may be written by other users \(mode 777\); .*chmod 700/);
  }
  assert.deepEqual(readdirSync(dataDir), []);
});

test('svc serve and the admin commands warn once of a parent other users may write into without the sticky bit, and go on', async (t) => {
  const shared = join(tempDir(t), 'shared');
  mkdirSync(shared);
  chmodSync(shared, 0o777);
  const dataDir = join(shared, 'data');
  const warning = `svc: warning: ${shared}, above the data directory ${dataDir}, may be written by other users (mode 777) and has no sticky bit: `;
  const warnedOnce = (stderr: string) => assert.deepEqual(stderr.split('\n').filter((line) => line.includes('warning')).map((line) => line.slice(0, warning.length)), [warning], stderr);

  const listed = await runSvc(['keys', 'list', '--data-dir', dataDir]);
  assert.equal(listed.code, 0, listed.stderr);
  warnedOnce(listed.stderr);
  assert.match(listed.stderr, new RegExp(`chmod go-w ${shared} \\(or chmod \\+t ${shared}\\)`));

  const server = await startServe(t, dataDir);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
  warnedOnce(server.output());

  // The sticky bit (as /tmp has) lets only the data directory's owner rename it.
  chmodSync(shared, 0o1777);
  const sticky = await runSvc(['keys', 'list', '--data-dir', dataDir]);
  assert.equal(sticky.code, 0);
  assert.equal(sticky.stderr, '');
});

test('a parent another user (not root) owns is warned of', { skip: process.getuid?.() !== 0 && 'needs root to give a directory away' }, async (t) => {
  const theirs = join(tempDir(t), 'theirs');
  mkdirSync(theirs, { mode: 0o755 });
  chownSync(theirs, 65534, 65534);
  const dataDir = join(theirs, 'data');
  const listed = await runSvc(['keys', 'list', '--data-dir', dataDir]);
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stderr, new RegExp(`^svc: warning: ${theirs}, above the data directory ${dataDir}, belongs to another user \\(uid 65534\\): `));
});

test('svc serve refuses a data directory whose socket path would be too long, before it listens, leaving nothing', async (t) => {
  const parent = tempDir(t);
  const dataDir = join(parent, 'x'.repeat(Math.max(1, 110 - parent.length)));
  const result = await runSvc(['serve', '--port', '0', '--data-dir', dataDir]);
  assert.equal(result.code, 1);
  assert.match(result.stderr, /too long for its local socket/);
  assert.doesNotMatch(result.stdout, /listening/);
  assert.deepEqual(readdirSync(parent), [], 'no socket bound at a cut path beside it, no directory made');
});

test('a file system failure in the data directory is said in words, with the directory named', () => {
  const denied = Object.assign(new Error("EACCES: permission denied, open '/srv/svc/svc.lock.1.ab'"), { code: 'EACCES' });
  assert.equal((dataDirFailure(denied, 'cannot write in the data directory /srv/svc') as Error).message, 'cannot write in the data directory /srv/svc: permission denied');
  const readOnly = Object.assign(new Error('EROFS: read-only file system'), { code: 'EROFS' });
  assert.equal((dataDirFailure(readOnly, 'cannot create the data directory /srv/svc') as Error).message, 'cannot create the data directory /srv/svc: the file system is read-only');
  // Anything else is passed on as it is.
  const other = Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
  assert.equal(dataDirFailure(other, 'x'), other);
  const toString = Object.assign(new Error('odd'), { code: 'toString' });
  assert.equal(dataDirFailure(toString, 'x'), toString);
});

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

/** The one line a failed start writes: what failed, where and what to do, no node errno text (`EFBIG: ...`) nor stack. */
const OVER_FILE_SIZE_LIMIT = /^svc: [^\n]*: a file would pass the file size limit of the process \(ulimit -f\); raise the limit\n$/;

test('a start whose writes pass a file size limit says so in one line and leaves no file of the lock, the key or the data file behind', { skip: !hasPrlimit && "needs util-linux's prlimit" }, async (t) => {
  // A file size limit (RLIMIT_FSIZE, in bytes) fails a write as a full disk does, once the file is created: node
  // ignores SIGXFSZ, so the write answers EFBIG. The lock record of a command (~57 bytes) fits in 60, a key (64) not;
  // a server's lock record (~100 bytes, with its socket's path) fits in 4096, the data file's template (~300 KB) not.
  const underLimit = (bytes: number, dataDir: string, command: string[] = ['keys', 'list']) =>
    spawnSync('prlimit', [`--fsize=${bytes}`, process.execPath, SVC, ...command, '--data-dir', dataDir], { encoding: 'utf8', env: { ...process.env, SVC_LOG_LEVEL: 'silent' } });
  const dataDir = join(tempDir(t), 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  const lockFailed = underLimit(0, dataDir);
  assert.equal(lockFailed.status, 1, lockFailed.stderr);
  assert.match(lockFailed.stderr, OVER_FILE_SIZE_LIMIT);
  assert.match(lockFailed.stderr, new RegExp(`cannot write in the data directory ${dataDir}:`));
  assert.deepEqual(readdirSync(dataDir), [], 'the lock\'s temporary file is removed');

  const templateFailed = underLimit(4096, dataDir, ['serve', '--port', '0']);
  assert.equal(templateFailed.status, 1, templateFailed.stderr);
  assert.match(templateFailed.stderr, OVER_FILE_SIZE_LIMIT);
  assert.match(templateFailed.stderr, new RegExp(`cannot create the data file ${join(dataDir, 'svc.db')}:`));
  assert.deepEqual(readdirSync(dataDir), [], 'the copy of the template is removed, and the lock');

  assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir])).code, 0);
  rmSync(join(dataDir, 'master.key'));
  const keyFailed = underLimit(60, dataDir);
  assert.equal(keyFailed.status, 1, keyFailed.stderr);
  assert.match(keyFailed.stderr, OVER_FILE_SIZE_LIMIT);
  assert.match(keyFailed.stderr, new RegExp(`cannot write the master key ${join(dataDir, 'master.key')}:`));
  assert.deepEqual(readdirSync(dataDir).filter((name) => name.startsWith('master.key')), [], 'the key\'s temporary file is removed');
});

test('under umask 000 everything svc serve makes in the data directory is its user\'s alone, the engine\'s lock directory included', async (t) => {
  const dataDir = join(tempDir(t), 'data');
  const server = await startServe(t, dataDir, {}, 'umask 000');
  const modes = Object.fromEntries(readdirSync(dataDir).map((name) => [name, statSync(join(dataDir, name)).mode & 0o777]));
  assert.equal(modes['svc.db.lock'], 0o700, 'the engine takes its lock with a mkdir the umask widens');
  for (const [name, mode] of Object.entries(modes)) assert.equal(mode & 0o077, 0, `${name} is mode ${mode.toString(8)}`);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);
});
