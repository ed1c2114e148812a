/**
 * A HEAD keeps its connection open as a GET does (docs/api.md "Connections"): svc answers `Connection: keep-alive` and
 * the next request goes on the same socket. `fetch` (undici) is not the probe: it sends `connection: close` on every
 * HEAD of its own accord (undici's client-h1.js, mcollina/undici#258), and svc, as HTTP/1.1 requires, closes then.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import type { Socket } from 'node:net';
import test from 'node:test';
import { bearer, build, newChatRun } from '../support/build.ts';

const BOOT = 'bootstrap-token-head-keep-alive-01';

test('HEAD answers keep the connection alive like GET: the next request reuses the socket', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const runId = await newChatRun(app, bearer(BOOT));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());

  const send = (method: string, path: string, headers: Record<string, string> = bearer(BOOT)) =>
    new Promise<{ status: number; connection: string | undefined; socket: Socket }>((resolve, reject) => {
      const sent = request({ host: '127.0.0.1', port, method, path, agent, headers }, (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection, socket: sent.socket! }));
      });
      sent.on('error', reject);
      sent.end();
    });

  const first = await send('GET', '/health');
  assert.equal(first.connection, 'keep-alive');
  for (const path of ['/health', `/api/v1/runs/${runId}/economics`, `/api/v1/runs/${runId}`]) {
    const head = await send('HEAD', path);
    assert.equal(head.status, 200, path);
    assert.equal(head.connection, 'keep-alive', path);
    assert.equal(head.socket, first.socket, `HEAD ${path} went on the first connection`);
  }
  const after = await send('GET', `/api/v1/runs/${runId}/economics`);
  assert.equal(after.connection, 'keep-alive');
  assert.equal(after.socket, first.socket, 'the connection outlived the HEADs');

  // A client that asks for the connection to close (what fetch sends on a HEAD) has it closed, GET or HEAD alike.
  for (const method of ['GET', 'HEAD']) assert.equal((await send(method, '/health', { connection: 'close' })).connection, 'close', method);
});
