/**
 * The bodies of the management API's writes: a JSON `null` is a body that is not an object, a 400 as `[]` or `5` is,
 * on every write. Read as no body (`request.body ?? {}`, a `.nullish()` schema), it stood for `{}`: a verification
 * e-mail resent, an invitation accepted without its fields, a logout (and, until its own fix, every cache tier cleared).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { Browser, buildAccounts } from '../support/accounts.ts';
import { bearer, build, json, newChatRun } from '../support/build.ts';
import { writeRoutes } from '../support/routes.ts';

const BOOT = 'bootstrap-token-write-bodies-0001';
const JSON_NULL = { payload: 'null', headers: { 'content-type': 'application/json' } };

test('a JSON null body is a 400 invalid_request on every write, before anything is looked up or done', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const routes = writeRoutes(app);
  assert.equal(routes.length, 30, JSON.stringify(routes));
  for (const [method, path] of routes) {
    const url = path.replace(/:\w+/g, 'x');
    const response = await app.inject({ method: method as 'POST', url, headers: { ...bearer(BOOT), ...JSON_NULL.headers }, payload: JSON_NULL.payload });
    assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
    const { error } = json(response);
    assert.equal(error.code, 'invalid_request', `${method} ${url}`);
    assert.equal(error.message, 'body: Invalid input: expected object, received null', `${method} ${url}`);
  }
});

test('a JSON null body did not stand for no body: a verification resend with one sent no e-mail; without a body it still sends', async (t) => {
  const { app, mail } = await buildAccounts(t, { env: { SVC_ALLOW_PUBLIC_SIGNUP: 'true' } });
  const ada = new Browser(app);
  assert.equal((await ada.post('/api/v1/auth/signup', { email: 'ada@acme.io', name: 'Ada', password: 'ada-password-1' })).statusCode, 201);
  const before = mail.sent.length;
  const refused = await ada.request('POST', '/api/v1/auth/verification/resend', JSON_NULL.payload, JSON_NULL.headers);
  assert.equal(refused.statusCode, 400, refused.body);
  assert.equal(mail.sent.length, before, 'no e-mail');
  const bodiless = await ada.request('POST', '/api/v1/auth/verification/resend');
  assert.equal(bodiless.statusCode, 202, bodiless.body);
  assert.equal(mail.sent.length, before + 1);
});

/** The writes whose inputs are their path alone: what a body would add could only narrow them, so none is taken. */
const BODILESS_WRITES: Array<[string, string]> = [
  ['POST', '/api/v1/keys/:id/revoke'],
  ['POST', '/api/v1/users/:id/reset-password'],
  ['DELETE', '/api/v1/users/:id'],
  ['DELETE', '/api/v1/orgs/active/members/:userId'],
  ['POST', '/api/v1/orgs/active/invites/:id/revoke'],
  ['POST', '/api/v1/orgs/active/onboarding/dismiss'],
  ['POST', '/api/v1/auth/logout'],
  ['POST', '/api/v1/auth/verification/resend'],
];

test('a write that takes no body refuses a field sent in one (400 naming it), and changes nothing; an empty object or none is taken', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const created = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer(BOOT), payload: { name: 'ci' } });
  assert.equal(created.statusCode, 201, created.body);
  const keyId: string = json(created).key.id;
  for (const [method, path] of BODILESS_WRITES) {
    const url = path.replace(':id/revoke', `${path.startsWith('/api/v1/keys') ? keyId : 'x'}/revoke`).replace(/:\w+/g, 'x');
    const response = await app.inject({ method: method as 'POST', url, headers: bearer(BOOT), payload: { tenant: 'other' } });
    assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
    const { error } = json(response);
    assert.equal(error.code, 'invalid_request', `${method} ${url}`);
    assert.match(error.message, /tenant/, `${method} ${url}`);
  }
  const key = json(await app.inject({ method: 'GET', url: '/api/v1/keys', headers: bearer(BOOT) })).keys.find((k: { id: string }) => k.id === keyId);
  assert.equal(key.status, 'active', 'the key was not revoked');
  for (const payload of [{}, undefined]) {
    const revoked = await app.inject({ method: 'POST', url: `/api/v1/keys/${keyId}/revoke`, headers: bearer(BOOT), ...(payload ? { payload } : {}) });
    assert.equal(revoked.statusCode, 200, revoked.body);
  }
});

test('a body naming a field twice is a 400 naming it, wherever it nests, and nothing is written; one name in sibling objects is taken', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const headers = { ...bearer(BOOT), 'content-type': 'application/json' };
  const audited = async () => json(await app.inject({ method: 'GET', url: '/api/v1/audit', headers: bearer(BOOT) })).events.length;
  const before = await audited();
  // JSON.parse keeps the last of two: a reader of the first (a proxy, a log, a reviewer) saw another request than svc served.
  const cases: Array<[string, string, string]> = [
    ['/api/v1/keys', '{"name":"ci","admin":false,"admin":true}', 'admin'],
    ['/api/v1/keys', '{"name":"ci","\\u006eame":"other"}', 'name'],
    ['/api/v1/settings', '{"key":"redaction","key":"canary_enabled","value":true}', 'key'],
    ['/api/v1/settings', '{"key":"model_substitutions","value":{"gpt-4o":"a","b":"{\\"gpt-4o\\":","gpt-4o":"c"}}', 'value.gpt-4o'],
    ['/api/v1/settings', '{"":1,"":2}', '""'],
  ];
  for (const [url, payload, field] of cases) {
    const method = url.endsWith('settings') ? 'PUT' : 'POST';
    const response = await app.inject({ method, url, headers, payload });
    assert.equal(response.statusCode, 400, `${payload}: ${response.body}`);
    const { error } = json(response);
    assert.equal(error.code, 'invalid_request', payload);
    assert.ok(error.message.startsWith(`${field}: `), `${payload}: ${error.message}`);
    assert.deepEqual(error.details, { issues: [{ path: field === '""' ? '' : field, message: error.message.slice(field.length + 2) }] }, payload);
  }
  assert.deepEqual(json(await app.inject({ method: 'GET', url: '/api/v1/keys', headers: bearer(BOOT) })).keys, [], 'no key created');
  const { settings } = json(await app.inject({ method: 'GET', url: '/api/v1/settings', headers: bearer(BOOT) }));
  assert.equal(settings.redaction, false);
  assert.equal(settings.canary_enabled, false);
  assert.deepEqual(settings.model_substitutions, {});
  assert.equal(await audited(), before, 'nothing audited');
  // The same name in two objects, or in an object and the one it holds, is no duplicate.
  const runId = await newChatRun(app, bearer(BOOT));
  const traced = await app.inject({
    method: 'POST',
    url: '/api/v1/trace',
    headers,
    payload: JSON.stringify({ runId, type: 'tool.called', payload: { name: 'lookup', args: [{ name: 1 }, { name: 2, args: { name: 3 } }], sideEffectLevel: 0 } }),
  });
  assert.equal(traced.statusCode, 201, traced.body);
});
