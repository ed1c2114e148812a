/**
 * SQLite's file layer (node-sqlite3-wasm) drops the errno of a failed write, so a full disk or a file size limit met
 * by the data file's log came out as the bare `svc: disk I/O error`: svc looks for either cause itself and says it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { explainIoFailure } from '../../src/store/io-failure.ts';
import { templateFileName } from '../../src/store/template.ts';
import { MIGRATIONS } from '../../src/store/migrations.ts';
import { ensureBundle, ROOT, runSvc, startServe, SVC, tempDir } from '../support/process.ts';

before(ensureBundle);

const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

test('a start whose first write to the log passes a file size limit says so in one line, naming the data file', { skip: !hasPrlimit && "needs util-linux's prlimit" }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir])).code, 0);
  // The lock record (~100 bytes) fits in 4096 bytes; the bootstrap admin's commit, the start's first write, appends a
  // frame of a 4 KiB page to the log past its 32-byte header, which does not.
  const started = spawnSync('prlimit', ['--fsize=4096', process.execPath, SVC, 'serve', '--port', '0', '--data-dir', dataDir], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, SVC_LOG_LEVEL: 'silent', SVC_ADMIN_EMAIL: 'admin@example.com', SVC_ADMIN_PASSWORD: 'correct horse battery' },
  });
  assert.equal(started.status, 1, started.stderr);
  assert.equal(
    started.stderr,
    `svc: cannot write the data file ${join(dataDir, 'svc.db')}: a file would pass the file size limit of the process (ulimit -f); raise the limit\n`,
  );
  assert.deepEqual(readdirSync(dataDir).sort(), ['master.key', 'svc.db'], 'no lock, engine lock or log left behind');
});

const isRoot = process.getuid?.() === 0;

test('a new data file whose log finds the disk full says so in one line, naming the data file', { skip: !isRoot && 'needs root to mount a small tmpfs' }, async (t) => {
  const mountPoint = tempDir(t);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=700', 'tmpfs', mountPoint], { encoding: 'utf8' });
  if (mounted.status !== 0) return t.skip(`tmpfs cannot be mounted here: ${mounted.stderr.trim()}`);
  // Unmounted here, not in an after hook: those run in the order they were added, tempDir's removal first.
  try {
    // Room for the lock record (a page) and the copy of the template, and one page more: the log's first frame, after
    // its 32-byte header, needs a second.
    const template = statSync(join(ROOT, 'dist', templateFileName(MIGRATIONS))).size;
    const { bfree, bsize } = statfsSync(mountPoint);
    writeFileSync(join(mountPoint, 'filler'), Buffer.alloc(bfree * bsize - template - 2 * bsize));
    const dataDir = join(mountPoint, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const result = await runSvc(['keys', 'list', '--data-dir', dataDir], { env: { SVC_LOG_LEVEL: 'silent' } });
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, `svc: cannot write the data file ${join(dataDir, 'svc.db')}: no space left on the device; free some space on it\n`);
    assert.deepEqual(readdirSync(dataDir), ['svc.db'], 'no lock, engine lock or log left behind');
  } finally {
    spawnSync('umount', [mountPoint]);
  }
});

test('an in-process admin command whose write passes a file size limit says so, naming the data file, not HTTP 500 internal', { skip: !hasPrlimit && "needs util-linux's prlimit" }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir])).code, 0);
  // The data file opens (nothing to write); the key's commit appends a frame of a 4 KiB page to the log, which does not fit.
  const created = spawnSync('prlimit', ['--fsize=4096', process.execPath, SVC, 'keys', 'create', '--name', 'ci', '--data-dir', dataDir], {
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, SVC_LOG_LEVEL: 'silent' },
  });
  assert.equal(created.status, 1, created.stderr);
  assert.equal(
    created.stderr,
    `svc: cannot write the data file ${join(dataDir, 'svc.db')}: a file would pass the file size limit of the process (ulimit -f); raise the limit\n`,
  );
  assert.equal(created.stdout, '', 'no key printed');
  assert.deepEqual(readdirSync(dataDir).sort(), ['master.key', 'svc.db'], 'no lock, engine lock or log left behind');
  assert.match((await runSvc(['keys', 'list', '--data-dir', dataDir])).stdout, /^No API keys\.$/m, 'the key was not created');
});

test('an in-process admin command whose write finds the disk full says so, naming the data file', { skip: !isRoot && 'needs root to mount a small tmpfs' }, async (t) => {
  const mountPoint = tempDir(t);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=700', 'tmpfs', mountPoint], { encoding: 'utf8' });
  if (mounted.status !== 0) return t.skip(`tmpfs cannot be mounted here: ${mounted.stderr.trim()}`);
  try {
    const dataDir = join(mountPoint, 'data');
    assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir])).code, 0);
    // Filled after the data file was made: room for the lock record and a page more, not for the key's commit.
    const { bfree, bsize } = statfsSync(mountPoint);
    writeFileSync(join(mountPoint, 'filler'), Buffer.alloc((bfree - 2) * bsize));
    const result = await runSvc(['users', 'create', '--email', 'ann@example.com', '--data-dir', dataDir]);
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr, `svc: cannot write the data file ${join(dataDir, 'svc.db')}: no space left on the device; free some space on it\n`);
    assert.deepEqual(readdirSync(dataDir).sort(), ['master.key', 'svc.db'], 'no lock, engine lock or log left behind');
  } finally {
    spawnSync('umount', [mountPoint]);
  }
});

test('a running server whose write passes a file size limit keeps the 500 generic for its client and logs the cause', { skip: process.platform !== 'linux' && 'the file size limit is read from /proc/self/limits' }, async (t) => {
  const dataDir = join(tempDir(t), 'data');
  assert.equal((await runSvc(['keys', 'list', '--data-dir', dataDir])).code, 0);
  // sh's ulimit -f counts 512-byte blocks: 4 KiB, as above.
  const server = await startServe(t, dataDir, { SVC_LOG_LEVEL: 'error' }, 'ulimit -f 8');
  // Through the server's local socket: an HTTP client like any other.
  const created = await runSvc(['keys', 'create', '--name', 'ci', '--data-dir', dataDir]);
  assert.equal(created.code, 1, created.stderr);
  assert.equal(created.stderr, 'svc: POST /api/v1/keys: HTTP 500 internal: Internal server error.\n');
  assert.match(
    server.output(),
    /"type":"DataFileIoError","message":"cannot write the data file [^"]*svc\.db: a file would pass the file size limit of the process \(ulimit -f\); raise the limit/,
  );
});

test('an I/O error neither a full disk nor a file size limit explains keeps SQLite\'s words, with the data file named', (t) => {
  const filePath = join(tempDir(t), 'svc.db');
  const ioError = new Error('disk I/O error');
  const explained = explainIoFailure(filePath, ioError) as Error;
  assert.equal(explained.message, `SQLite could not read or write the data file ${filePath}: disk I/O error`);
  assert.equal(explained.cause, ioError);
  assert.equal(explainIoFailure(filePath, explained), explained, 'explained once');
  const other = new Error('UNIQUE constraint failed: users.email');
  assert.equal(explainIoFailure(filePath, other), other);
});
