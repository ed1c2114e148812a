/**
 * `startServer` (src/server.ts) when its start fails half-way, after the TCP port is bound: it closes what it opened
 * (the port, the data file, the data directory's lock), so an in-process caller can go on and start again.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
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
