/**
 * `startServer` (src/server.ts) when its start fails half-way, after the TCP port is bound: it closes what it opened
 * (the port, the data file, the data directory's lock), so an in-process caller can go on and start again; and the
 * local socket it listens on, private from the moment it is made.
 */
import assert from 'node:assert/strict';
import fs, { mkdirSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import test from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { SOCKET_FILE, startServer } from '../../src/server.ts';
import { listenOnce, tempDir } from '../support/process.ts';

test('a start that fails after binding its port closes the port, the data file and the lock', async (t) => {
  const dataDir = tempDir(t, 'svc-start-failure-');
  // A directory where the local socket goes: the start fails after the TCP listener is up (svc cannot replace it).
  mkdirSync(join(dataDir, SOCKET_FILE));
  const port = await listenOnce();
  const config = () => loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_HOST: '127.0.0.1', SVC_PORT: String(port) }, { dataDir });

  await assert.rejects(startServer(config()), /directory/i);
  assert.equal(await listenOnce(port), port, 'the TCP port is free again');

  rmSync(join(dataDir, SOCKET_FILE), { recursive: true });
  const server = await startServer(config());
  try {
    const response = await fetch(`${server.address}/health`);
    assert.equal(response.status, 200, 'the same data directory starts again: its lock and file were released');
    await response.arrayBuffer();
  } finally {
    await server.close();
  }
});

test('the local socket is made private: no moment where another user may connect, whatever the umask', async (t) => {
  const dataDir = tempDir(t, 'svc-socket-mode-');
  // The socket's file takes its mode from the umask when it is made; a chmod after it leaves a moment in between.
  // Skipped here (as if that moment lasted), the socket must already be 0600 under the most open umask.
  const chmod = fs.chmodSync;
  fs.chmodSync = ((path: fs.PathLike, mode: fs.Mode) => {
    if (!String(path).endsWith(SOCKET_FILE)) chmod(path, mode);
  }) as typeof fs.chmodSync;
  syncBuiltinESMExports();
  const umask = process.umask(0);
  t.after(() => {
    process.umask(umask);
    fs.chmodSync = chmod;
    syncBuiltinESMExports();
  });
  const port = await listenOnce();
  const server = await startServer(loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_HOST: '127.0.0.1', SVC_PORT: String(port) }, { dataDir }));
  try {
    assert.equal((fs.statSync(join(dataDir, SOCKET_FILE)).mode & 0o777).toString(8), '600');
    assert.equal(process.umask(0), 0, 'the umask is given back');
  } finally {
    await server.close();
  }
});
