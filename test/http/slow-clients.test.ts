/**
 * A client trickling its request is cut at the header timeout, not up to 30 s later (node checks its connections
 * against the timeouts only every `connectionsCheckingInterval`, 30 s unless set): over TCP and the local socket.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import test, { before } from 'node:test';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

/** Send the start of a request and never finish it; resolves with what came back and when the connection ended. */
function trickle(socket: Socket): Promise<{ text: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => (text += chunk));
    socket.on('close', () => resolve({ text, ms: Date.now() - started }));
    socket.on('error', () => undefined);
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ');
  });
}

test('a request whose headers never end is answered 408 within a few seconds of SVC_HEADERS_TIMEOUT_MS, on TCP and the local socket', async (t) => {
  const dataDir = tempDir(t);
  const svc = await startServe(t, dataDir, { SVC_HEADERS_TIMEOUT_MS: '1000' });
  const { port } = new URL(svc.address);
  const [tcp, local] = await Promise.all([trickle(connect(Number(port), '127.0.0.1')), trickle(connect(join(dataDir, 'svc.sock')))]);
  for (const cut of [tcp, local]) {
    assert.match(cut.text, /^HTTP\/1\.1 408/);
    // Node's default check every 30 s cut such a client 27-30 s late; the check every second within ~2 s.
    assert.ok(cut.ms < 10_000, `cut after ${cut.ms} ms`);
  }
});

/** Resolves 'closed' when the server ends the connection, 'still open' if it has not after `deadlineMs`. */
function closedWithin(socket: Socket, deadlineMs: number): Promise<'closed' | 'still open'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('still open');
    }, deadlineMs);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve('closed');
    });
  });
}

test('a connection where nothing moves is closed after SVC_IDLE_TIMEOUT_MS, on TCP and the local socket', async (t) => {
  const dataDir = tempDir(t);
  // Header and request timeouts far away: only the idle timeout may end these connections.
  const svc = await startServe(t, dataDir, { SVC_IDLE_TIMEOUT_MS: '1000', SVC_HEADERS_TIMEOUT_MS: '300000', SVC_REQUEST_TIMEOUT_MS: '300000' });
  const { port } = new URL(svc.address);
  const [tcp, local] = await Promise.all([
    closedWithin(connect(Number(port), '127.0.0.1'), 30_000),
    closedWithin(connect(join(dataDir, 'svc.sock')), 30_000),
  ]);
  assert.deepEqual({ tcp, local }, { tcp: 'closed', local: 'closed' });
});

test('a header timeout above node\'s default request timeout (300 s) starts when SVC_REQUEST_TIMEOUT_MS allows it', async (t) => {
  const dataDir = tempDir(t);
  const svc = await startServe(t, dataDir, { SVC_HEADERS_TIMEOUT_MS: '600000', SVC_REQUEST_TIMEOUT_MS: '3600000' });
  const health = await fetch(`${svc.address}/health`);
  assert.equal(health.status, 200);
});
