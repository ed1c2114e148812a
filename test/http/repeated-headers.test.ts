/**
 * A request that carries a credential, Host or an identity header (SPEC 5.3) more than once, or two different
 * credentials, is refused with 400 before anything reads it (src/http/singular-headers.ts): node keeps the first
 * `Authorization` and `Host` and drops the rest without a word, so which one svc acted on depended on the order, and an
 * intermediary that reads the last one saw another caller than svc. On a real listening server: `inject` cannot
 * repeat a header.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build } from '../support/build.ts';
import { exchange } from '../support/raw-http.ts';
import { repeatedSingularHeader } from '../../src/http/singular-headers.ts';

const BOOT = 'bootstrap-token-repeated-headers-01';
const MESSAGES = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

async function listening(t: test.TestContext): Promise<number> {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

const get = (path: string, headers: string) => `GET ${path} HTTP/1.1\r\nHost: svc\r\n${headers}Connection: close\r\n\r\n`;
const postMessages = (headers: string) =>
  `POST /v1/messages HTTP/1.1\r\nHost: svc\r\n${headers}Content-Type: application/json\r\nContent-Length: ${MESSAGES.length}\r\nConnection: close\r\n\r\n${MESSAGES}`;

test('a repeated Authorization is a 400 whichever of its values comes first', async (t) => {
  const port = await listening(t);
  for (const [first, second] of [
    [BOOT, 'wrong'],
    ['wrong', BOOT],
    [BOOT, BOOT],
  ]) {
    const answer = await exchange(port, get('/api/v1/keys', `Authorization: Bearer ${first}\r\nauthorization: Bearer ${second}\r\n`));
    assert.equal(answer.status, 400, `${first}, ${second}`);
    assert.deepEqual(answer.body, { error: { code: 'invalid_request', message: 'The request carries more than one authorization header.' } });
    assert.ok(!answer.headers.includes(BOOT));
  }
  // One is served as ever.
  assert.equal((await exchange(port, get('/api/v1/keys', `Authorization: Bearer ${BOOT}\r\n`))).status, 200);
});

test('a repeated Host is a 400 (RFC 9112 section 3.2), on every route', async (t) => {
  const port = await listening(t);
  const answer = await exchange(port, 'GET /health HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n');
  assert.equal(answer.status, 400);
  assert.deepEqual(answer.body, { error: { code: 'invalid_request', message: 'The request carries more than one host header.' } });
  const http10 = await exchange(port, 'GET /health HTTP/1.0\r\nHost: a.example\r\nHost: b.example\r\n\r\n');
  assert.equal(http10.status, 400);
});

test('on the messages wire a repeated x-api-key, or x-api-key and Authorization naming different tokens, is a 400', async (t) => {
  const port = await listening(t);
  const repeated = await exchange(port, postMessages(`x-api-key: ${BOOT}\r\nX-Api-Key: other\r\n`));
  assert.equal(repeated.status, 400);
  const requestId = /\r\nrequest-id: (req_\S+)/.exec(repeated.headers)?.[1];
  assert.ok(requestId);
  assert.deepEqual(repeated.body, { type: 'error', error: { type: 'invalid_request_error', message: 'The request carries more than one x-api-key header.' }, request_id: requestId });

  // Authorization alone used to win: the x-api-key beside it was never looked at.
  for (const [apiKey, bearer] of [
    ['wrong', BOOT],
    [BOOT, 'wrong'],
  ]) {
    const mixed = await exchange(port, postMessages(`x-api-key: ${apiKey}\r\nAuthorization: Bearer ${bearer}\r\n`));
    assert.equal(mixed.status, 400, `${apiKey}, ${bearer}`);
    assert.deepEqual(mixed.body, {
      type: 'error',
      error: { type: 'invalid_request_error', message: 'The request carries two different credentials, in Authorization and x-api-key.' },
      request_id: /\r\nrequest-id: (req_\S+)/.exec(mixed.headers)?.[1],
    });
  }
  // The same token in both (an SDK given it as both its API key and its auth token) is one credential.
  const same = await exchange(port, postMessages(`x-api-key: ${BOOT}\r\nAuthorization: Bearer ${BOOT}\r\n`));
  assert.equal(same.status, 200);
  // An empty x-api-key is no credential (an SDK given an empty API key beside its auth token sends one).
  const empty = await exchange(port, postMessages(`x-api-key: \r\nAuthorization: Bearer ${BOOT}\r\n`));
  assert.equal(empty.status, 200);
  // Outside the messages wire x-api-key is no credential at all, and is not compared.
  assert.equal((await exchange(port, get('/v1/models', `x-api-key: other\r\nAuthorization: Bearer ${BOOT}\r\n`))).status, 200);
});

test('a repeated identity header (X-Svc-App, -Agent, -Subject, -Tenant) is a 400 in the surface shape', async (t) => {
  const port = await listening(t);
  for (const name of ['X-Svc-App', 'X-Svc-Agent', 'X-Svc-Subject']) {
    const answer = await exchange(port, get('/v1/models', `Authorization: Bearer ${BOOT}\r\n${name}: a\r\n${name}: b\r\n`));
    assert.equal(answer.status, 400, name);
    assert.deepEqual(answer.body, {
      error: { message: `The request carries more than one ${name.toLowerCase()} header.`, type: 'invalid_request_error', param: null, code: 'invalid_request' },
    });
  }
  const tenant = await exchange(port, get('/api/v1/keys', `Authorization: Bearer ${BOOT}\r\nX-Svc-Tenant: default\r\nX-Svc-Tenant: other\r\n`));
  assert.equal(tenant.status, 400);
  // Each once, as ever.
  const once = await exchange(port, get('/v1/models', `Authorization: Bearer ${BOOT}\r\nX-Svc-App: a\r\nX-Svc-Agent: b\r\nX-Svc-Subject: c\r\n`));
  assert.equal(once.status, 200);
});

test('repeatedSingularHeader compares names in any case and counts no other name of the same length', () => {
  assert.equal(repeatedSingularHeader(['HOST', 'a', 'Accept', '*/*', 'host', 'b']), 'host');
  assert.equal(repeatedSingularHeader(['X-SVC-AGENT', 'a', 'x-Svc-Agent', 'b']), 'x-svc-agent');
  // x-api-key and x-svc-app share a length; x-svc-foo and X-Request-Id-like names are not singular.
  assert.equal(repeatedSingularHeader(['x-api-key', 'a', 'x-svc-app', 'b', 'x-svc-foo', 'c', 'x-svc-foo', 'd', 'Host', 'h']), null);
  assert.equal(repeatedSingularHeader([]), null);
});

test('a repeated Content-Type is a 400: node read the body by the first, an intermediary may have by the last', async (t) => {
  const port = await listening(t);
  const body = '{"name":"k"}';
  for (const [first, second] of [
    ['text/plain', 'application/json'],
    ['application/json', 'text/plain'],
  ]) {
    const answer = await exchange(
      port,
      `POST /api/v1/keys HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${BOOT}\r\nContent-Type: ${first}\r\nContent-Type: ${second}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    assert.equal(answer.status, 400, `${first}, ${second}`);
    assert.deepEqual(answer.body, { error: { code: 'invalid_request', message: 'The request carries more than one content-type header.' } });
  }
});
