/** SPEC 5.1-5.3: the three modes, malformed credentials, identical 401 bodies per surface, identity headers. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json } from '../support/build.ts';
import { contentChunk, startFakeUpstream, startSse } from '../support/fake-upstream.ts';

const BOOT = 'bootstrap-token-auth-tests-000001';
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const MESSAGES = { model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };

test('open dev mode: no credentials configured, callers are admins of the default tenant', async (t) => {
  const { app } = await build(t);
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 200);
  // Placeholder tokens from SDK examples work in open mode; svc_-shaped unknown tokens are still refused.
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: bearer('sk-placeholder') })).statusCode, 200);
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: bearer('svc_unknownunknownunknownunknownunknown0000') })).statusCode, 401);
  const created = json(await app.inject({ method: 'POST', url: '/api/v1/keys', payload: { name: 'first' } }));
  assert.equal(created.key.mode, 'optimize');
});

test('open dev mode answers no request addressed to a DNS name of the web (DNS rebinding): a page that rebinds its name to svc gets no admin', async (t) => {
  const { app } = await build(t, { env: { SVC_APP_BASE_URL: 'https://svc.example.test' } });
  // A page at attacker.example whose name now resolves to 127.0.0.1 sends its own name as Host and Origin: same-origin.
  const rebound = { host: 'attacker.example:8787', origin: 'http://attacker.example:8787' };
  const minted = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: rebound, payload: { name: 'pwn', admin: true } });
  assert.equal(minted.statusCode, 403, minted.body);
  assert.equal(json(minted).error.code, 'forbidden');
  // The refusal names every kind of host that is answered, so the operator can pick one.
  for (const kind of ['localhost', 'a name ending in .localhost', 'an IP address', 'a single-label name', 'SVC_APP_BASE_URL', 'SVC_HOST', 'present an API key']) {
    assert.ok(json(minted).error.message.includes(kind), `${kind}: ${json(minted).error.message}`);
  }
  assert.equal((await app.inject({ url: '/api/v1/runs', headers: { host: 'Attacker.Example.' } })).statusCode, 403);
  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...rebound, ...bearer('sk-placeholder') }, payload: CHAT });
  assert.equal(chat.statusCode, 403);
  assert.equal(json(chat).error.type, 'permission_error');
  assert.equal(json(await app.inject({ url: '/api/v1/keys' })).keys.length, 0);
  // Loopback names, IP literals, single-label names (a compose service) and SVC_APP_BASE_URL's host are answered.
  for (const host of ['localhost:8787', 'svc.localhost', '127.0.0.1:8787', '[::1]:8787', '192.168.1.20', 'svc:8787', 'svc.example.test']) {
    assert.equal((await app.inject({ url: '/api/v1/keys', headers: { host } })).statusCode, 200, host);
  }
});

test('the open gateway of protected mode answers no request addressed to a DNS name of the web (DNS rebinding)', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, SVC_ALLOW_OPEN_GATEWAY: 'true' } });
  const rebound = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { host: 'attacker.example' }, payload: CHAT });
  assert.equal(rebound.statusCode, 403);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT })).statusCode, 200);
  // A credential is no rebinding page's: the bootstrap token works whatever the Host.
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: { host: 'svc.example.org', ...bearer(BOOT) } })).statusCode, 200);
});

test('protected mode: headerless, wrong and malformed credentials are 401 with one identical body per surface', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const variants: Array<Record<string, string>> = [
    {},
    bearer('wrong-token'),
    { authorization: 'Basic dXNlcjpwYXNz' },
    { authorization: 'Bearer' },
    { authorization: 'Bearer a b' },
    { authorization: `Bearer ${BOOT}x` },
  ];
  const bodies = { management: new Set<string>(), chat: new Set<string>(), messages: new Set<string>() };
  for (const headers of variants) {
    const management = await app.inject({ url: '/api/v1/keys', headers });
    const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload: CHAT });
    const messages = await app.inject({ method: 'POST', url: '/v1/messages', headers, payload: MESSAGES });
    for (const response of [management, chat, messages]) assert.equal(response.statusCode, 401, JSON.stringify(headers));
    bodies.management.add(management.body);
    bodies.chat.add(chat.body);
    // Its body names the request too (`request_id`, as the provider's does): the same but for that id.
    const { request_id: requestId, ...messagesBody } = json(messages);
    assert.equal(requestId, messages.headers['request-id']);
    bodies.messages.add(JSON.stringify(messagesBody));
  }
  assert.equal(bodies.management.size, 1);
  assert.equal(bodies.chat.size, 1);
  assert.equal(bodies.messages.size, 1);
  assert.equal(json({ body: [...bodies.management][0]! }).error.code, 'unauthorized');
  assert.equal(json({ body: [...bodies.chat][0]! }).error.code, 'invalid_api_key');
  assert.equal(JSON.parse([...bodies.messages][0]!).type, 'error');
  assert.equal(json({ body: [...bodies.messages][0]! }).error.type, 'authentication_error');
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: bearer(BOOT) })).statusCode, 200);
  // The messages wire also takes x-api-key.
  const key = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'sdk' } })).token;
  assert.equal((await app.inject({ method: 'POST', url: '/v1/messages', headers: { 'x-api-key': key }, payload: MESSAGES })).statusCode, 200);
  // Nothing in any 401 echoes the presented credential.
  for (const body of [...bodies.management, ...bodies.chat, ...bodies.messages]) assert.ok(!body.includes('wrong-token'));
});

test('a revoked key is rejected on the very next request', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const { key, token } = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'short-lived' } }));
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(token), payload: CHAT })).statusCode, 200);
  assert.equal((await app.inject({ method: 'POST', url: `/api/v1/keys/${key.id}/revoke`, headers: bearer(BOOT) })).statusCode, 200);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(token), payload: CHAT })).statusCode, 401);
});

test('a stream in flight when its key is revoked runs to its end; the key\'s next request is 401', async (t) => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const upstream = await startFakeUpstream(t, async (_request, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('before '))}\n\n`);
    await released;
    res.write(`data: ${JSON.stringify({ ...contentChunk('after'), choices: [{ index: 0, delta: { content: 'after' }, finish_reason: 'stop' }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const { key, token } = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'streaming' } }));
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify({ ...CHAT, stream: true }),
  });
  assert.equal(response.status, 200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('before ')) text += decoder.decode((await reader.read()).value, { stream: true });
  assert.equal((await app.inject({ method: 'POST', url: `/api/v1/keys/${key.id}/revoke`, headers: bearer(BOOT) })).statusCode, 200);
  release();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value, { stream: true });
  assert.match(text, /"content":"after"/);
  assert.match(text, /data: \[DONE\]/);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(token), payload: CHAT })).statusCode, 401);
});

test('login mode: headerless requests are 401 on both surfaces; open gateway lets the gateway in only', async (t) => {
  const { app } = await build(t, { env: { SVC_REQUIRE_LOGIN: 'true' } });
  assert.equal((await app.inject({ url: '/api/v1/keys' })).statusCode, 401);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT })).statusCode, 401);
  const open = await build(t, { env: { SVC_API_KEY: BOOT, SVC_ALLOW_OPEN_GATEWAY: 'true' } });
  assert.equal((await open.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: CHAT })).statusCode, 200);
  assert.equal((await open.app.inject({ url: '/api/v1/keys' })).statusCode, 401);
});

test('behind trusted proxies, a rebinding page cannot pass the DNS rebinding check by naming localhost in X-Forwarded-Host', async (t) => {
  // A browser on the machine reaches svc from a trusted address (127.0.0.1, or a container network's gateway through
  // a published port), and a same-origin page may set X-Forwarded-Host: the Host its browser sent counts too.
  const { app } = await build(t, { env: { SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1' } });
  const rebound = { host: 'attacker.example:8787', origin: 'http://attacker.example:8787', 'x-forwarded-host': 'localhost' };
  const minted = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: rebound, payload: { name: 'pwn', admin: true } });
  assert.equal(minted.statusCode, 403, minted.body);
  assert.equal(json(minted).error.code, 'forbidden');
  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: rebound, payload: CHAT });
  assert.equal(chat.statusCode, 403);
  // A proxy that sends its upstream's name as Host and the public name in X-Forwarded-Host: that name must be one svc
  // answers at, as before.
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: { host: 'svc:8787', 'x-forwarded-host': 'attacker.example' } })).statusCode, 403);
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: { host: 'svc:8787', 'x-forwarded-host': 'localhost:8787' } })).statusCode, 200);
  assert.equal((await app.inject({ url: '/api/v1/keys', headers: { host: '[::1]:8787', 'x-forwarded-host': '127.0.0.1' } })).statusCode, 200);
});

test('identity headers: app, agent and subject reach the run; a pinned key overrides X-Svc-App; bad values are 400', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'p', appId: 'billing' } })).token;
  const response = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { ...bearer(pinned), 'x-svc-app': 'other-app', 'x-svc-agent': 'planner', 'x-svc-subject': 'user-42' },
    payload: CHAT,
  });
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}`, headers: bearer(BOOT) })).run;
  assert.deepEqual([run.appId, run.agent, run.subject], ['billing', 'planner', 'user-42']);
  const bad = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...bearer(BOOT), 'x-svc-subject': 'x'.repeat(500) }, payload: CHAT });
  assert.equal(bad.statusCode, 400);
});

test('an identity header with a non-breaking or other Unicode space around its value is a 400, not the value without it', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  // 0xA0 is a byte a client may send (node reads header values as latin1); trim() took it off like a space, so a
  // subject of "\xa0user-42" acted as "user-42" (and shared its cache entries) and "\xa0" alone as no subject.
  for (const value of ['\u00a0user-42', 'user-42\u00a0', '\u00a0', '\u3000user-42', '\ufeffuser-42']) {
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...bearer(BOOT), 'x-svc-subject': value }, payload: CHAT });
    assert.equal(response.statusCode, 400, JSON.stringify(value));
    assert.match(json(response).error.message, /X-Svc-Subject must be printable ASCII/);
  }
  // HTTP's own whitespace around a value (space, tab) is no part of it.
  const spaced = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...bearer(BOOT), 'x-svc-subject': ' \tuser-42\t ' }, payload: CHAT });
  assert.equal(spaced.statusCode, 200);
  const run = json(await app.inject({ url: `/api/v1/runs/${spaced.headers['x-svc-run-id']}`, headers: bearer(BOOT) })).run;
  assert.equal(run.subject, 'user-42');
});
