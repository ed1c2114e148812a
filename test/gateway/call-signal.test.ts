/**
 * GatewaySignal, the gateway's stand-in for an AbortSignal: listeners as an AbortSignal's (once, removable), one
 * abort with its reason, and undici's `request` aborted by it in flight or refusing to start when it already fired.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import { request } from 'undici';
import { GatewaySignal, undiciSignal } from '../../src/gateway/call-signal.ts';

test('listeners fire once, with the first reason; a removed listener does not fire', () => {
  const signal = new GatewaySignal();
  const calls: string[] = [];
  const removed = () => calls.push('removed');
  signal.addEventListener('abort', () => calls.push(`once:${String(signal.reason)}`), { once: true });
  signal.addEventListener('abort', () => calls.push('kept'));
  signal.addEventListener('abort', removed, { once: true });
  signal.removeEventListener('abort', removed);
  assert.equal(signal.aborted, false);
  signal.abort('first');
  signal.abort('second');
  assert.equal(signal.aborted, true);
  assert.equal(signal.reason, 'first');
  assert.deepEqual(calls, ['once:first', 'kept']);
});

test("undici's request is aborted by it in flight, with its reason, and the upstream sees the connection close", async (t) => {
  let closed!: () => void;
  const upstreamClosed = new Promise<void>((resolve) => (closed = resolve));
  let answering!: () => void;
  const upstreamAnswering = new Promise<void>((resolve) => (answering = resolve));
  const server = createServer((_req, res) => {
    res.on('close', () => closed());
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":'); // and never ends
    answering();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  const signal = new GatewaySignal();
  const reason = new Error('client disconnected');
  const pending = request(url, { method: 'POST', body: '{}', signal: undiciSignal(signal) }).then((response) => response.body.text());
  // Aborted once the upstream is answering: a timer could fire before the request reached it (a loaded machine), and
  // an upstream that never saw the request never sees its connection close.
  await upstreamAnswering;
  signal.abort(reason);
  await assert.rejects(pending, (error) => error === reason);
  await upstreamClosed;

  const already = new GatewaySignal();
  already.abort(reason);
  await assert.rejects(request(url, { signal: undiciSignal(already) }), (error) => error === reason);
});
