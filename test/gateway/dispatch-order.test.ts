/**
 * A live request's upstream call goes out before the run's opening record is written: undici writes a request to a
 * connection it reuses one event-loop turn after the dispatch (it first checks the idle socket), and the pipeline's
 * bookkeeping must not run in front of that write. A request also asks the ledger, first of all, to commit a window
 * that fell due.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { test } from 'node:test';
import { build } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, sleep, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

test('on a reused upstream connection the request headers are written before the run is opened, for buffered and streamed calls', async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    if ((request.body as { stream?: boolean }).stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
      return;
    }
    sendJson(res, 200, completion('ordered'));
  });
  const { app, services } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });

  const order: string[] = [];
  const onHeaders = () => order.push('upstream request written');
  subscribe('undici:client:sendHeaders', onHeaders);
  t.after(() => unsubscribe('undici:client:sendHeaders', onHeaders));
  const start = services.ledger.start.bind(services.ledger);
  services.ledger.start = (input) => {
    order.push('run opened');
    return start(input);
  };

  const ask = async (content: string, stream = false) => {
    order.length = 0;
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-local-dev' },
      payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], stream },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(response.headers['x-svc-route'], 'live');
    return [...order];
  };

  // The first call opens the connection: its write waits for the connect, so there the order is not the point.
  await ask('first, on a new connection');
  assert.deepEqual(await ask('second, on the reused connection'), ['upstream request written', 'run opened']);
  assert.deepEqual(await ask('third, streamed', true), ['upstream request written', 'run opened']);
  await services.store.flush();
  assert.equal(upstream.requests.length, 3);
});

test('a gateway request asks the ledger to commit a window that fell due before it does anything else', async (t) => {
  const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, completion('asked')));
  const { app, services } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const order: string[] = [];
  const commitIfOverdue = services.ledger.commitIfOverdue.bind(services.ledger);
  services.ledger.commitIfOverdue = () => {
    order.push('ledger asked');
    commitIfOverdue();
  };
  const start = services.ledger.start.bind(services.ledger);
  services.ledger.start = (input) => {
    order.push('run opened');
    return start(input);
  };
  for (const content of ['one', 'two']) {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-local-dev' },
      payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] },
    });
    assert.equal(response.statusCode, 200, response.body);
  }
  assert.deepEqual(order, ['ledger asked', 'run opened', 'ledger asked', 'run opened']);
});

test('a run that cannot be opened fails its call with a 500 and releases the upstream stream it had opened', async (t) => {
  const upstream = await startFakeUpstream(t, (_request, res) => {
    // A stream that would go on for a long time: only svc closing the connection ends it.
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('first'))}\n\n`);
  });
  const { app, services } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  // A real server, not inject(): the client stays connected after its answer, so only svc can end the upstream call.
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  services.ledger.start = () => {
    throw new Error('the ledger cannot record (a test double)');
  };
  const closed = upstream.clientClosed();
  for (const stream of [true, false]) {
    const response = await fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-local-dev', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `unrecordable (${stream})` }], stream }),
    });
    const body = await response.text();
    assert.equal(response.status, 500, body);
    assert.equal(JSON.parse(body).error.type, 'server_error');
    assert.doesNotMatch(body, /test double/, 'the internal failure is not echoed');
    if (stream) {
      const released = await Promise.race([closed.then(() => true), sleep(loadScaled(2_000)).then(() => false)]);
      assert.ok(released, 'the opened upstream stream was released');
      upstream.handle((_request, res) => sendJson(res, 200, completion('buffered')));
    }
  }
  assert.equal(upstream.requests.length, 2);
});

test('a run that cannot be opened releases an upstream stream that already came whole, unread, and svc serves on', async (t) => {
  // The whole stream arrives before svc releases it: undici fails a body closed unread then with an error event.
  const upstream = await startFakeUpstream(t, (_request, res) => sendChunks(res, [contentChunk('whole'), { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]));
  const { app, services } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const start = services.ledger.start;
  services.ledger.start = () => {
    throw new Error('the ledger cannot record (a test double)');
  };
  const ask = (content: string) =>
    fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-local-dev', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], stream: true }),
    });
  const refused = await ask('unrecordable');
  assert.equal(refused.status, 500, await refused.text());
  // Past the turn undici fails the released body in, and the one after.
  await sleep(50);
  services.ledger.start = start;
  const answered = await ask('recorded again');
  assert.equal(answered.status, 200);
  assert.match(await answered.text(), /whole/);
});
