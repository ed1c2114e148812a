/**
 * Errors node's HTTP parser raises before a request exists are answered in the error shape of the surface the
 * request line names (src/http/client-errors.ts), on a real listening server, then the connection is closed.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import test from 'node:test';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { SOCKET_FILE, startServer } from '../../src/server.ts';
import { build, logSink } from '../support/build.ts';
import { tempDir } from '../support/process.ts';
import { exchange, exchangeText, type RawAnswer } from '../support/raw-http.ts';
import { completion, contentChunk, sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { requestTargetOf } from '../../src/http/client-errors.ts';

/**
 * The request id a raw answer carries, as every svc answer does (docs/api.md, request ids): in `x-request-id`, and on
 * the messages wire also in `request-id` and the body's `request_id`.
 */
function requestIdOf(answer: RawAnswer, wire: 'messages' | 'other'): string {
  const id = /\r\nx-request-id: (\S+)\r\n/i.exec(`${answer.headers}\r\n`)?.[1];
  assert.ok(id, `no x-request-id in ${answer.headers}`);
  const messagesId = /\r\nrequest-id: (\S+)\r\n/i.exec(`${answer.headers}\r\n`)?.[1];
  if (wire === 'messages') {
    assert.equal(messagesId, id);
    assert.equal((answer.body as { request_id: unknown }).request_id, id);
  } else {
    assert.equal(messagesId, undefined);
  }
  return id;
}

test('a header section over the limit is a 431 in the shape of the surface the request line names', async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const oversized = (path: string) => `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(40_000)}\r\n\r\n`;

  const chat = await exchange(port, oversized('/v1/chat/completions'));
  assert.equal(chat.status, 431);
  assert.match(chat.headers, /\r\nconnection: close/i);
  assert.deepEqual(chat.body, { error: { message: "The request's header section is too large.", type: 'invalid_request_error', param: null, code: 'headers_too_large' } });
  // A fresh id: the request's own headers were not read.
  assert.match(requestIdOf(chat, 'other'), /^req_[0-9a-f]{24}$/);

  const messages = await exchange(port, oversized('/v1/messages'));
  assert.equal(messages.status, 431);
  const messagesId = requestIdOf(messages, 'messages');
  assert.deepEqual(messages.body, { type: 'error', error: { type: 'request_too_large', message: "The request's header section is too large." }, request_id: messagesId });

  const management = await exchange(port, oversized('/api/v1/keys?limit=5'));
  assert.equal(management.status, 431);
  assert.equal((management.body as { error: { code: string } }).error.code, 'headers_too_large');
  assert.notEqual(requestIdOf(management, 'other'), messagesId);
});

test('a URL longer than the header section may be is a 414 in the shape of its surface, not a 431', async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const long = 'a'.repeat(17_000);
  const message = 'The URL is longer than the 16 KiB a request line and its headers may have together.';

  const chat = await exchange(port, `GET /v1/models/${long} HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(chat.status, 414);
  assert.match(chat.headers, /\r\nconnection: close/i);
  assert.deepEqual(chat.body, { error: { message, type: 'invalid_request_error', param: null, code: 'uri_too_long' } });
  requestIdOf(chat, 'other');

  const messages = await exchange(port, `POST /v1/messages?x=${long} HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(messages.status, 414);
  assert.deepEqual(messages.body, { type: 'error', error: { type: 'invalid_request_error', message }, request_id: requestIdOf(messages, 'messages') });

  const management = await exchange(port, `GET /api/v1/keys?x=${long} HTTP/1.1\r\nHost: x\r\n\r\n`);
  assert.equal(management.status, 414);
  assert.deepEqual(management.body, { error: { code: 'uri_too_long', message } });
  requestIdOf(management, 'other');

  // A URL that fits, with headers that do not, is still the header section's 431.
  const headers = await exchange(port, `GET /v1/models/${'a'.repeat(9_000)} HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(9_000)}\r\n\r\n`);
  assert.equal(headers.status, 431);
});

test('bytes that are not HTTP are a 400 in the management shape, and the server goes on serving', async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const garbage = await exchange(port, 'HELLO THERE\r\n\r\n');
  assert.equal(garbage.status, 400);
  assert.deepEqual(garbage.body, { error: { code: 'invalid_request', message: 'The request is not valid HTTP.' } });
  requestIdOf(garbage, 'other');
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(health.status, 200);
});

/**
 * A gateway on a real port whose upstream holds each answer until svc's server has met bytes that are not HTTP (its
 * `clientError`), so those bytes are parsed while the answer before them is still due.
 */
async function heldUntilClientError(t: import('node:test').TestContext, answer: (res: import('node:http').ServerResponse) => Promise<void> | void) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const upstream = await startFakeUpstream(t, async (_request, res) => {
    await answer(res);
    await held;
    if (res.headersSent) res.end('data: [DONE]\n\n');
    else sendJson(res, 200, completion('answered'));
  });
  t.after(() => release());
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  app.server.on('clientError', () => release());
  return { port: (app.server.address() as { port: number }).port, upstream };
}

const chatRequest = (stream: boolean) => {
  const body = JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: 'hi' }] });
  return `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
};

test('bytes that are not HTTP behind a stream under way are answered 400 once the stream is complete, not inside it', async (t) => {
  const { port } = await heldUntilClientError(t, (res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('first'))}\n\n`);
  });
  const received = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(chatRequest(true)));
    let text = '';
    let sent = false;
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
      // The stream's first event is out: pipeline bytes that are not HTTP behind it.
      if (!sent && text.includes('"first"')) {
        sent = true;
        socket.write('HELLO THERE\r\n\r\n');
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
  const [stream, refusal] = received.split(/(?=HTTP\/1\.1 )/);
  // The stream whole (its last event and the chunked body's end), then the 400, after it.
  assert.match(stream!, /^HTTP\/1\.1 200 [\s\S]*data: \[DONE\]\n\n\r\n0\r\n\r\n$/);
  assert.match(refusal ?? '', /^HTTP\/1\.1 400 [\s\S]*not valid HTTP/);
  const health = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(health.status, 200);
});

test('a request in flight keeps its answer when bytes that are not HTTP follow it: the 400 comes after it', async (t) => {
  const { port, upstream } = await heldUntilClientError(t, () => {});
  const answer = await exchangeText(port, chatRequest(false) + 'HELLO THERE\r\n\r\n');
  assert.deepEqual(answer.match(/HTTP\/1\.1 \d{3}(?= )/g), ['HTTP/1.1 200', 'HTTP/1.1 400'], answer);
  assert.ok(answer.includes('"answered"'), answer);
  assert.equal(upstream.requests.length, 1);
});

test('the requests node would answer itself (no Host, an Expect it does not meet, CONNECT) get an error in the surface shape', async (t) => {
  const { app } = await build(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;

  const noHost = await exchange(port, 'POST /v1/messages HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}');
  assert.equal(noHost.status, 400);
  const requestId = /\r\nx-request-id: (req_\S+)/.exec(noHost.headers)?.[1];
  assert.ok(requestId);
  assert.match(noHost.headers, new RegExp(`\r\nrequest-id: ${requestId}\r\n`));
  assert.deepEqual(noHost.body, { type: 'error', error: { type: 'invalid_request_error', message: 'An HTTP/1.1 request must carry a Host header.' }, request_id: requestId });
  // HTTP/1.0 has no Host to require.
  assert.equal((await exchange(port, 'GET /health HTTP/1.0\r\n\r\n')).status, 200);

  const expectation = await exchange(port, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
  assert.equal(expectation.status, 417);
  assert.deepEqual(expectation.body, {
    error: { message: 'The only expectation svc meets is Expect: 100-continue.', type: 'invalid_request_error', param: null, code: 'expectation_failed' },
  });
  requestIdOf(expectation, 'other');
  // These requests were read whole: a well-formed id the client sent is kept, as on any other answer.
  const messagesExpectation = await exchange(port, 'POST /v1/messages HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nx-request-id: trace-417\r\nContent-Length: 2\r\n\r\n{}');
  assert.equal(messagesExpectation.status, 417);
  assert.equal(requestIdOf(messagesExpectation, 'messages'), 'trace-417');

  const tunnel = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  assert.equal(tunnel.status, 405);
  assert.deepEqual(tunnel.body, { error: { code: 'method_not_allowed', message: 'CONNECT is not served: svc is not a proxy.' } });
  assert.match(requestIdOf(tunnel, 'other'), /^req_/);
  const traced = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nx-request-id: trace-405\r\n\r\n');
  assert.equal(requestIdOf(traced, 'other'), 'trace-405');

  const health = await fetch(`http://127.0.0.1:${port}/health`);
  assert.equal(health.status, 200);
});

test('a body cut by the request timeout is answered 408 in its request\'s surface shape, unless that request was answered already', async (t) => {
  const token = 'bootstrap-token-slow-body-01';
  const { app } = await build(t, { env: { SVC_API_KEY: token, SVC_HEADERS_TIMEOUT_MS: '1000', SVC_REQUEST_TIMEOUT_MS: '1000' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const start = (path: string, credential: string) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\n${credential}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"model":`;

  const messages = await exchange(port, start('/v1/messages', `x-api-key: ${token}\r\n`));
  assert.equal(messages.status, 408);
  assert.match(messages.headers, /\r\nconnection: close/i);
  const messagesId = requestIdOf(messages, 'messages');
  assert.deepEqual(messages.body, { type: 'error', error: { type: 'invalid_request_error', message: 'The request did not arrive within the request timeout.' }, request_id: messagesId });
  const chat = await exchange(port, start('/v1/chat/completions', `Authorization: Bearer ${token}\r\n`));
  assert.equal(chat.status, 408);
  assert.equal((chat.body as { error: { code: string } }).error.code, 'request_timeout');
  requestIdOf(chat, 'other');
  // Its headers were read and the request handed to the app: a well-formed id of the client's own is kept, as there.
  const traced = await exchange(port, start('/v1/messages', `x-api-key: ${token}\r\nx-request-id: trace-408\r\n`));
  assert.equal(traced.status, 408);
  assert.equal(requestIdOf(traced, 'messages'), 'trace-408');

  // Refused before its body was read: the 401 is its answer, and the timeout only closes the connection.
  const refused = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(start('/v1/messages', '')));
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
  assert.match(refused, /^HTTP\/1\.1 401 /);
  assert.equal(refused.match(/HTTP\/1\.1 /g)?.length, 1, refused);
});

test('SVC_REQUEST_TIMEOUT_MS below SVC_HEADERS_TIMEOUT_MS cuts a trickled body at its own time, not the header timeout\'s', async (t) => {
  const { app } = await build(t, { env: { SVC_REQUEST_TIMEOUT_MS: '1000', SVC_HEADERS_TIMEOUT_MS: '15000' } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const started = Date.now();
  const cut = await exchange(port, 'POST /api/v1/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":');
  assert.equal(cut.status, 408);
  // Within the connections check (every second) of the request timeout; node alone held it to the 15 s header timeout.
  assert.ok(Date.now() - started < 5_000, `cut after ${Date.now() - started} ms`);
});

test('an answer of the HTTP layer is logged once under its request id, without the request\'s headers', async (t) => {
  const sink = logSink();
  const { app } = await build(t, { log: sink, overrides: { log: { warn() {} } } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const secret = 'sk-secret-in-a-header-0123456789';
  const answer = await exchange(port, `POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: ${secret}\r\nX-Filler: ${'a'.repeat(40_000)}\r\n\r\n`);
  const tunnel = await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  const log = sink.text();
  const lines = log
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { reqId?: string; res?: { statusCode: number }; code?: string });
  const answered = lines.filter((line) => line.reqId === requestIdOf(answer, 'messages'));
  assert.equal(answered.length, 1, log);
  assert.equal(answered[0]!.res?.statusCode, 431);
  assert.equal(answered[0]!.code, 'headers_too_large');
  assert.equal(lines.filter((line) => line.reqId === requestIdOf(tunnel, 'other') && line.res?.statusCode === 405).length, 1, log);
  assert.ok(!log.includes(secret));
});

test('the local socket answers parser errors with a request id too', async (t) => {
  const dataDir = tempDir(t, 'svc-client-errors-');
  const server = await startServer(loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_HOST: '127.0.0.1', SVC_PORT: '0' }, { dataDir }));
  t.after(() => server.close());
  const socketPath = join(dataDir, SOCKET_FILE);

  const oversized = await exchange(socketPath, `POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(40_000)}\r\n\r\n`);
  assert.equal(oversized.status, 431);
  requestIdOf(oversized, 'messages');
  const garbage = await exchange(socketPath, 'HELLO THERE\r\n\r\n');
  assert.equal(garbage.status, 400);
  requestIdOf(garbage, 'other');
  const tunnel = await exchange(socketPath, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
  assert.equal(tunnel.status, 405);
  requestIdOf(tunnel, 'other');
});

test('requestTargetOf reads the target of a request line only', () => {
  assert.equal(requestTargetOf(Buffer.from('GET /v1/models HTTP/1.1\r\nHost: x\r\n')), '/v1/models');
  assert.equal(requestTargetOf(Buffer.from('POST /v1/messages?beta=true HTTP/1.0\r\n')), '/v1/messages?beta=true');
  assert.equal(requestTargetOf(Buffer.from('HELLO THERE\r\n')), null);
  assert.equal(requestTargetOf(Buffer.from('GET http://evil/ HTTP/1.1\r\n')), null);
  assert.equal(requestTargetOf(undefined), null);
  assert.equal(requestTargetOf({ type: 'Buffer', data: [] }), null);
});
