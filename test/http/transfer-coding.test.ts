/**
 * A request body is read as it was sent or de-chunked, nothing else (src/http/transfer-coding.ts): a transfer coding
 * other than `chunked` is 501 (RFC 9112 section 6.1), and `Transfer-Encoding` on an HTTP/1.0 request is faulty framing,
 * a 400 that closes the connection. node's parser takes `gzip, chunked`, removes the chunks and hands on the gzip
 * bytes, which svc read as JSON. On a real listening server: `inject` sends no Transfer-Encoding.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { gzipSync } from 'node:zlib';
import { build } from '../support/build.ts';
import { exchange, exchangeText } from '../support/raw-http.ts';

const BOOT = 'bootstrap-token-transfer-coding-01';
const CHAT = Buffer.from(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));

async function listening(t: test.TestContext): Promise<number> {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

const chunksOf = (body: Buffer) => Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
const post = (path: string, transferEncoding: string, body: Buffer, { version = '1.1', connection = 'close' } = {}) =>
  Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/${version}\r\nHost: svc\r\nAuthorization: Bearer ${BOOT}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: ${transferEncoding}\r\nConnection: ${connection}\r\n\r\n`,
    ),
    chunksOf(body),
  ]);

test('a transfer coding other than chunked is a 501 in the surface shape, whatever its body holds', async (t) => {
  const port = await listening(t);
  // gzip bytes were read as JSON (a 400 about the body), and JSON declared gzip was served.
  for (const body of [gzipSync(CHAT), CHAT]) {
    const chat = await exchange(port, post('/v1/chat/completions', 'gzip, chunked', body));
    assert.equal(chat.status, 501);
    assert.deepEqual(chat.body, {
      error: { message: 'svc decodes no transfer coding but chunked; send the body as it is, chunked or with Content-Length.', type: 'server_error', param: null, code: 'not_implemented' },
    });
  }
  const messages = await exchange(port, post('/v1/messages', 'deflate, chunked', CHAT));
  assert.equal(messages.status, 501);
  assert.equal((messages.body as { error: { type: string } }).error.type, 'api_error');
  const keys = await exchange(port, post('/api/v1/keys', 'identity, chunked', Buffer.from('{"name":"k"}')));
  assert.equal(keys.status, 501);
  assert.equal((keys.body as { error: { code: string } }).error.code, 'not_implemented');
});

test('plain chunked is served in any spelling, and a 501 to a body still coming closes its connection', async (t) => {
  const port = await listening(t);
  for (const spelling of ['chunked', 'Chunked', ' chunked ', ', chunked']) {
    assert.equal((await exchange(port, post('/v1/chat/completions', spelling, CHAT))).status, 200, spelling);
  }
  // Refused before its body is read, as every such answer (src/http/surface.ts): the connection closes, lingering,
  // rather than node draining a body that may never end, so the request behind it is not answered.
  const both = await exchangeText(port, Buffer.concat([post('/v1/chat/completions', 'gzip, chunked', CHAT, { connection: 'keep-alive' }), post('/v1/chat/completions', 'chunked', CHAT)]));
  assert.match(both, /^HTTP\/1\.1 501 /);
  assert.match(both, /\r\nconnection: close\r\n/i);
  assert.doesNotMatch(both, /HTTP\/1\.1 200 /);
});

test('Transfer-Encoding on an HTTP/1.0 request is faulty framing: 400, and the connection is closed', async (t) => {
  const port = await listening(t);
  const answer = await exchange(port, post('/v1/chat/completions', 'chunked', CHAT, { version: '1.0', connection: 'keep-alive' }));
  assert.equal(answer.status, 400);
  assert.match(answer.headers, /\r\nconnection: close/i);
  assert.deepEqual(answer.body, {
    error: { message: 'An HTTP/1.0 request cannot carry Transfer-Encoding (RFC 9112 section 6.1).', type: 'invalid_request_error', param: null, code: 'invalid_request' },
  });
  // Asked to keep the connection, svc closes it all the same: nothing behind that request is answered.
  const behind = await exchangeText(
    port,
    Buffer.concat([post('/v1/chat/completions', 'chunked', CHAT, { version: '1.0', connection: 'keep-alive' }), Buffer.from('GET /health HTTP/1.1\r\nHost: svc\r\nConnection: close\r\n\r\n')]),
  );
  assert.equal(behind.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, behind);
});
