/**
 * A request target in absolute form (`POST http://host/v1/messages HTTP/1.1`, RFC 9112 section 3.2.2: a server must
 * accept it) is routed by its path, and is the surface of that path in everything else too. On a real listening
 * server: `app.inject` sends the origin form whatever URL it is given.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import test from 'node:test';
import { bearer, build, newChatRun } from '../support/build.ts';
import { exchange } from '../support/raw-http.ts';

const BOOT = 'bootstrap-token-request-target-01';
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a NUL \u0000 in a prompt is kept' }] };

/** Send `target` as the request line's target, verbatim (node:http writes `path` as it is given). */
function send(port: number, method: string, target: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({ host: '127.0.0.1', port, method, path: target, headers: payload ? { ...headers, 'content-type': 'application/json' } : headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

test('a request target in absolute form is its path: x-api-key on the messages wire, the surface error shape, gateway body rules', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;

  // The messages wire's SDKs send x-api-key; it counts there whatever form the target has.
  const answered = await send(port, 'POST', 'http://svc.example/v1/messages', { 'x-api-key': BOOT }, MESSAGES);
  assert.equal(answered.status, 200);
  assert.equal(answered.body.type, 'message');
  const upper = await send(port, 'POST', 'HTTPS://svc.example:8443/v1/messages?beta=true', { 'x-api-key': BOOT }, MESSAGES);
  assert.equal(upper.status, 200);

  const refused = await send(port, 'POST', 'http://svc.example/v1/messages', {}, MESSAGES);
  assert.equal(refused.status, 401);
  assert.match(refused.body.request_id, /^req_/);
  assert.deepEqual(refused.body, { type: 'error', error: { type: 'authentication_error', message: 'Missing or invalid bearer token.' }, request_id: refused.body.request_id });

  const unknown = await send(port, 'GET', 'http://svc.example/v1/nope', { authorization: `Bearer ${BOOT}` });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.error.code, 'unknown_url');
  assert.equal(unknown.body.error.type, 'invalid_request_error');

  // A gateway prompt may hold a NUL (docs/configuration.md); only management bodies refuse one.
  const chat = await send(port, 'POST', 'http://svc.example/v1/chat/completions', { authorization: `Bearer ${BOOT}` }, CHAT);
  assert.equal(chat.status, 200);
  assert.equal(chat.body.object, 'chat.completion');

  // The management API is the management API in either form.
  const keys = await send(port, 'GET', 'http://svc.example/api/v1/keys', {});
  assert.equal(keys.status, 401);
  assert.equal(keys.body.error.code, 'unauthorized');
});

test('a path percent-encoding a character that needs none is refused at once: the router would serve a route its raw text does not name', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const refusal = 'The URL path percent-encodes a character that is sent as it is (%6D is m): send it unencoded.';

  // `/v1/%6dessages` reached the messages wire, but was shaped (x-api-key refused, chat errors) as the chat wire.
  const messages = await send(port, 'POST', '/v1/%6dessages', { 'x-api-key': BOOT }, MESSAGES);
  assert.equal(messages.status, 400);
  assert.equal(messages.body.error.message, refusal);
  // `/%761/chat/completions` reached the chat wire, shaped as the management API (a NUL in a prompt refused).
  const chat = await send(port, 'POST', '/%761/chat/completions', { authorization: `Bearer ${BOOT}` }, CHAT);
  assert.equal(chat.status, 400);
  assert.equal(chat.body.error.message, 'The URL path percent-encodes a character that is sent as it is (%76 is v): send it unencoded.');
  const upper = await send(port, 'POST', '/v1/%6Dessages', { 'x-api-key': BOOT }, MESSAGES);
  assert.equal(upper.body.error.message, refusal);

  // Encodings a path needs, and any in the query, are served as before.
  const model = await send(port, 'GET', '/v1/models/no%2Fsuch%20model', { authorization: `Bearer ${BOOT}` });
  assert.equal(model.status, 404);
  assert.equal(model.body.error.code, 'model_not_found');
  const query = await send(port, 'POST', '/v1/messages?b%65ta=true', { 'x-api-key': BOOT }, MESSAGES);
  assert.equal(query.status, 200);
  const nul = await send(port, 'GET', '/api/v1/keys?x=%00', { authorization: `Bearer ${BOOT}` });
  assert.equal(nul.status, 400);
  assert.equal(nul.body.error.message, 'The URL holds a NUL character (%00).');
});

test('a request target holding a raw # is refused on every surface: the router read the fragment as the query', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  await newChatRun(app, bearer(BOOT));
  await newChatRun(app, bearer(BOOT));
  const refusal = 'The URL holds a # (a fragment, which a request target never carries): send a # as %23.';
  // No HTTP client sends a fragment; only raw bytes do.
  const get = (target: string, headers = '') => exchange(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${BOOT}\r\n${headers}Connection: close\r\n\r\n`);

  // `#limit=1` was applied as `?limit=1`: one run of the two listed.
  const runs = await get('/api/v1/runs#limit=1');
  assert.equal(runs.status, 400);
  assert.deepEqual(runs.body, { error: { code: 'invalid_request', message: refusal } });
  assert.match(runs.headers, /\r\nx-request-id: req_/);
  assert.equal((await get('/api/v1/runs?limit=1#x')).status, 400);
  // A write refused it as an unknown query parameter; now for what it is.
  const write = await exchange(port, `POST /api/v1/keys#name=x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${BOOT}\r\nContent-Type: application/json\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"name":"k1"}`);
  assert.equal(write.status, 400);
  assert.equal((write.body as any).error.message, refusal);
  // The gateway's shapes, and a target in absolute form.
  const models = await get('http://svc.example/v1/models#x');
  assert.equal(models.status, 400);
  assert.equal((models.body as any).error.type, 'invalid_request_error');
  assert.equal((models.body as any).error.message, refusal);
  const messages = await exchange(port, `POST /v1/messages#x HTTP/1.1\r\nHost: x\r\nx-api-key: ${BOOT}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
  assert.equal(messages.status, 400);
  assert.equal((messages.body as any).type, 'error');
  assert.equal((messages.body as any).error.message, refusal);
  const health = await get('/health#');
  assert.equal(health.status, 400);

  // An encoded # is a character of the path or the query, served as before.
  const listed = await get('/api/v1/runs?limit=1');
  assert.equal(listed.status, 200);
  assert.equal((listed.body as any).runs.length, 1);
  assert.equal((await get('/api/v1/runs')).status, 200);
  const model = await get('/v1/models/a%23b');
  assert.equal(model.status, 404);
  assert.equal((model.body as any).error.code, 'model_not_found');
});
