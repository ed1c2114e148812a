/**
 * While the app drains (a graceful shutdown has started, src/http/draining.ts), every request is refused with svc's own
 * 503 `shutting_down`, in the shape of the surface it arrived on, with the headers every answer carries; its
 * connection closes after it. (The real executable's shutdown is in test/e2e/graceful-shutdown.test.ts.)
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import test from 'node:test';
import { build, json } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

const MESSAGE = 'The server is shutting down; retry the request on another instance or once it is back.';

test('while draining, each surface answers 503 shutting_down in its own shape, with x-request-id, CORS headers and connection: close', async (t) => {
  const { app } = await build(t);
  await app.ready();
  app.draining.begin();
  const cases = [
    { method: 'GET' as const, url: '/v1/models', body: { error: { message: MESSAGE, type: 'server_error', param: null, code: 'shutting_down' } } },
    { method: 'POST' as const, url: '/v1/messages', body: { type: 'error', error: { type: 'overloaded_error', message: MESSAGE }, request_id: 'req-draining-1' } },
    { method: 'GET' as const, url: '/api/v1/runs', body: { error: { code: 'shutting_down', message: MESSAGE } } },
    { method: 'GET' as const, url: '/health', body: { error: { code: 'shutting_down', message: MESSAGE } } },
  ];
  for (const { method, url, body } of cases) {
    const response = await app.inject({
      method,
      url,
      headers: { origin: 'https://app.example', 'x-request-id': 'req-draining-1', ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
      ...(method === 'POST' ? { payload: '{}' } : {}),
    });
    assert.equal(response.statusCode, 503, url);
    assert.deepEqual(json(response), body, url);
    assert.equal(response.headers['x-request-id'], 'req-draining-1', url);
    // The messages wire's SDKs read it from `request-id`.
    assert.equal(response.headers['request-id'], url === '/v1/messages' ? 'req-draining-1' : undefined, url);
    assert.equal(response.headers['access-control-allow-origin'], '*', url);
    assert.equal(response.headers.connection, 'close', url);
  }
});

test('before draining starts, requests are answered as usual', async (t) => {
  const { app } = await build(t);
  const response = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(response.statusCode, 200);
  assert.equal(app.draining.active, false);
  assert.notEqual(response.headers.connection, 'close');
});

test('an answer queued behind another on a pipelined connection that closed does not hold the drain', async (t) => {
  const upstream = await startFakeUpstream(t, async (request, res) => {
    if (String(request.body?.messages?.[0]?.content).startsWith('#slow#')) await new Promise((resolve) => setTimeout(resolve, 1_500));
    if (!res.destroyed) sendJson(res, 200, completion('answered'));
  });
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const { port } = new URL(await app.listen({ port: 0, host: '127.0.0.1' }));
  // One connection: a slow call, then a quick one, whose answer is ended at once but queued behind the first's.
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const call = (content: string) => {
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });
    return `POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer sk-local-dev\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  socket.write(call('#slow# first') + call('second'));
  await new Promise((resolve) => setTimeout(resolve, 400));
  // node emits no `close` on the queued answer when its connection closes.
  socket.destroy();
  await new Promise((resolve) => setTimeout(resolve, 100));
  app.draining.begin();
  const drained = await Promise.race([app.draining.flushed().then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), loadScaled(3_000)))]);
  assert.ok(drained, 'the drain did not wait for the answer that can never be sent');
});
