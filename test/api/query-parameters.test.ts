/**
 * The management API's query parameters: a parameter an endpoint does not take is a 400 naming it, never ignored. An
 * ignored one answered as if it had been applied: `/runs?until=` answered runs after that date too, `/audit?offset=`
 * (the audit log pages by `before`) answered the first page again and again, `/runs?status[]=failed` every status.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { buildWithAdmin } from '../support/accounts.ts';
import { bearer, build, json, newChatRun } from '../support/build.ts';
import { writeRoutes } from '../support/routes.ts';

const BOOT = 'bootstrap-token-query-parameters-01';
const admin = bearer(BOOT);

async function setup(t: any) {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const runId = await newChatRun(built.app, admin);
  return { get: (url: string) => built.app.inject({ url, headers: admin }), runId };
}

/** The 400 `invalid_request` of `url`, whose one issue names the query parameter `name`: its error. */
async function refusedNaming(get: Awaited<ReturnType<typeof setup>>['get'], url: string, name: string) {
  const response = await get(url);
  assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
  const { error } = json(response);
  assert.equal(error.code, 'invalid_request', url);
  assert.deepEqual(error.details.issues.map((issue: { path: string }) => issue.path), [name], url);
  return error as { message: string };
}

test('a query parameter an endpoint does not take is a 400 naming it, on every endpoint that reads a query', async (t) => {
  const { get, runId } = await setup(t);
  const cases: Array<[string, string]> = [
    ['/api/v1/runs?until=2000-01-01', 'until'],
    ['/api/v1/runs?status[]=failed', 'status[]'],
    ['/api/v1/runs?status[a]=failed', 'status[a]'],
    ['/api/v1/runs?limit=5&after=3', 'after'],
    [`/api/v1/runs/${runId}?offset=10`, 'offset'],
    [`/api/v1/runs/${runId}/events?offset=10`, 'offset'],
    ['/api/v1/audit?offset=50', 'offset'],
    ['/api/v1/audit?since=2026-01-01', 'since'],
    ['/api/v1/keys?status=revoked', 'status'],
    ['/api/v1/users?role=admin', 'role'],
    ['/api/v1/orgs?name=acme', 'name'],
    ['/api/v1/orgs/active/invites?email=a%40b.io', 'email'],
    ['/api/v1/savings?limit=5', 'limit'],
    ['/api/v1/usage/attribution?limit=5', 'limit'],
  ];
  for (const [url, name] of cases) {
    const error = await refusedNaming(get, url, name);
    assert.ok(error.message.startsWith(`${name}: unknown query parameter`), `${url}: ${error.message}`);
  }
});

test('a parameter named like an Object.prototype member is refused as any other: /audit?__proto__=1 answered 200', async (t) => {
  const { get, runId } = await setup(t);
  // The check read the names after zod copied the query into a plain object, where a `__proto__` key sets the
  // prototype instead of becoming a key: the name was gone before it was looked at.
  const endpoints = ['/api/v1/audit', '/api/v1/runs', `/api/v1/runs/${runId}`, `/api/v1/runs/${runId}/events`, '/api/v1/keys', '/api/v1/users', '/api/v1/orgs', '/api/v1/orgs/active/invites', '/api/v1/savings', '/api/v1/usage/attribution', '/api/v1/usage', '/api/v1/settings'];
  for (const endpoint of endpoints) {
    for (const name of ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString']) {
      await refusedNaming(get, `${endpoint}?${name}=1`, name);
      await refusedNaming(get, `${endpoint}?${name}`, name);
    }
    await refusedNaming(get, `${endpoint}?__proto__[limit]=1`, '__proto__[limit]');
    await refusedNaming(get, `${endpoint}?a[]=1`, 'a[]');
    await refusedNaming(get, `${endpoint}?a;b=1`, 'a;b');
  }
  await refusedNaming(get, '/api/v1/audit?limit=5&__proto__=2', '__proto__');
});

test('a parameter with an empty name is refused naming the query, not the body: /audit?=1 said "body: unknown query parameter"', async (t) => {
  const { get } = await setup(t);
  // The error mapping named an issue whose path joins to '' as the body, so the 400 blamed a body the GET never had.
  for (const url of ['/api/v1/audit?=1', '/api/v1/audit?=', '/api/v1/runs?limit=5&=x', '/api/v1/settings?=1']) {
    const error = await refusedNaming(get, url, '');
    assert.ok(error.message.startsWith('"": unknown query parameter; this endpoint takes '), `${url}: ${error.message}`);
  }
  const badEncoding = await refusedNaming(get, '/api/v1/runs?=%ff', '');
  assert.equal(badEncoding.message, '"": its value percent-encodes bytes that are not UTF-8');
});

test('a write refuses a __proto__ query parameter too, before doing anything', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const created = await app.inject({ method: 'POST', url: '/api/v1/users?__proto__=1', headers: admin, payload: { email: 'ann@acme.io', tempPassword: 'Temp-password-123456' } });
  assert.equal(created.statusCode, 400, created.body);
  assert.equal(json(created).error.message, '__proto__: unknown query parameter; this endpoint takes none');
  assert.deepEqual(json(await app.inject({ url: '/api/v1/users', headers: admin })).users, []);
});

test('every parameter an endpoint documents is still taken, together', async (t) => {
  const { get, runId } = await setup(t);
  const urls = [
    '/api/v1/runs?limit=5&offset=0&route=live&status=completed&provider=mock&model=gpt-4o-mini&since=2000-01-01&ingested=false',
    `/api/v1/runs/${runId}?limit=5&before=9&sideEffectLimit=5&sideEffectBefore=9&feedbackLimit=5&feedbackBefore=9`,
    `/api/v1/runs/${runId}/events?limit=5&before=9`,
    '/api/v1/audit?limit=5&before=9&decision=allow&verify=true',
    '/api/v1/keys?limit=5&offset=0',
    '/api/v1/users?limit=5&offset=0&email=a%40b.io',
    '/api/v1/orgs?limit=5&offset=0',
    '/api/v1/orgs/active/invites?limit=5&offset=0&status=pending',
    '/api/v1/savings?since=2000-01-01&until=2100-01-01',
    '/api/v1/usage/attribution?since=2000-01-01&until=2100-01-01&routeLimit=5&routeOffset=0&fallbackLimit=5&fallbackOffset=0',
  ];
  for (const url of urls) {
    const response = await get(url);
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  const runs = json(await get('/api/v1/runs?limit=5&status=completed&since=2000-01-01'));
  assert.equal(runs.runs.length, 1);
});

test('a query value whose percent-encoding is not UTF-8, or is no percent-encoding, is a 400 naming the parameter; UTF-8 and %25 are read', async (t) => {
  const { get } = await setup(t);
  // Each was read as its literal text (`%ff%fe`), a filter nobody sent, and answered 200 with no runs.
  const refused: Array<[string, string]> = [
    ['/api/v1/runs?model=%ff%fe', 'model'],
    ['/api/v1/runs?limit=5&provider=%E2%80', 'provider'],
    ['/api/v1/runs?model=%ed%a0%80', 'model'],
    ['/api/v1/runs?model=%c0%af', 'model'],
    ['/api/v1/users?email=a%zzb', 'email'],
    ['/api/v1/runs?model=100%', 'model'],
    ['/api/v1/audit?decision=allow&bad%ff=1', 'bad%ff'],
  ];
  for (const [url, name] of refused) {
    const error = await refusedNaming(get, url, name);
    assert.ok(error.message.startsWith(`${name}: `), `${url}: ${error.message}`);
    assert.match(error.message, name === 'bad%ff' ? /: its name / : /: its value /, url);
  }
  for (const url of ['/api/v1/runs?model=caf%C3%A9', '/api/v1/runs?model=%F0%9F%98%80', '/api/v1/runs?model=100%25', '/api/v1/runs?model=gpt-4o-mini']) {
    const response = await get(url);
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  assert.equal(json(await get('/api/v1/runs?model=gpt%2D4o%2Dmini')).runs.length, 1);
});

test('a blank users email filter is no filter, as every blank filter is: it filtered on the empty address and listed no one', async (t) => {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const created = await built.app.inject({ method: 'POST', url: '/api/v1/users', headers: admin, payload: { email: 'ann@acme.io', tempPassword: 'Temp-password-123456' } });
  assert.equal(created.statusCode, 201, created.body);
  for (const url of ['/api/v1/users?email=', '/api/v1/users?email=%20%20']) {
    const listed = json(await built.app.inject({ url, headers: admin }));
    assert.deepEqual(listed.users.map((user: { email: string }) => user.email), ['ann@acme.io'], url);
    assert.equal(listed.pagination.total, 1, url);
  }
  const found = json(await built.app.inject({ url: '/api/v1/users?email=%20ANN%40acme.io', headers: admin }));
  assert.equal(found.pagination.total, 1);
  const none = json(await built.app.inject({ url: '/api/v1/users?email=bob%40acme.io', headers: admin }));
  assert.equal(none.pagination.total, 0);
});

test('the usage and cache stats endpoints take no query: a window or a cache type sent to them is a 400, not an answer for the month or every type', async (t) => {
  const { get } = await setup(t);
  const cases: Array<[string, string]> = [
    ['/api/v1/usage?since=2025-01-01', 'since'],
    ['/api/v1/usage?until=2025-01-31', 'until'],
    ['/api/v1/cache/stats?cacheType=exact_response', 'cacheType'],
  ];
  for (const [url, name] of cases) {
    assert.equal((await refusedNaming(get, url, name)).message, `${name}: unknown query parameter; this endpoint takes none`, url);
  }
  for (const url of ['/api/v1/usage', '/api/v1/cache/stats']) assert.equal((await get(url)).statusCode, 200, url);
});

test('the endpoints that read no query refuse one too: /settings?key=x answered every setting as if filtered', async (t) => {
  const { get, runId } = await setup(t);
  const takesNone = [
    '/api/v1/settings',
    '/api/v1/readiness',
    '/api/v1/orgs/active',
    '/api/v1/orgs/active/onboarding',
    `/api/v1/runs/${runId}/route`,
    `/api/v1/runs/${runId}/integrity`,
    `/api/v1/runs/${runId}/economics`,
    `/api/v1/runs/${runId}/replay-bundle`,
    `/api/v1/runs/${runId}/evidence-packet`,
  ];
  for (const url of takesNone) {
    assert.equal((await get(url)).statusCode, 200, url);
    assert.equal((await refusedNaming(get, `${url}?key=x`, 'key')).message, 'key: unknown query parameter; this endpoint takes none', url);
  }
  // A receipt is refused its query before the run is found to have none (404 without one).
  for (const url of [`/api/v1/runs/${runId}/receipt`, `/api/v1/receipts/${runId}`]) {
    assert.equal((await get(url)).statusCode, 404, url);
    assert.equal((await get(`${url}?key=x`)).statusCode, 400, url);
  }
});

test('/auth/me takes no query either: a signed-in session sending one gets a 400 naming it, as from every other management GET', async (t) => {
  const { admin } = await buildWithAdmin(t);
  const me = await admin.get('/api/v1/auth/me');
  assert.equal(me.statusCode, 200, me.body);
  assert.equal(json(me).user.email, 'root@example.test');
  const cases: Array<[string, string]> = [
    ['/api/v1/auth/me?org=x', 'org'],
    ['/api/v1/auth/me?include[]=orgs', 'include[]'],
  ];
  for (const [url, name] of cases) {
    assert.equal((await refusedNaming(admin.get, url, name)).message, `${name}: unknown query parameter; this endpoint takes none`, url);
  }
});

test('a blank choice filter is no filter, as a blank text filter is: /runs?status= was a 400 where /runs?model= listed every run', async (t) => {
  const { get } = await setup(t);
  for (const url of ['/api/v1/runs?status=', '/api/v1/runs?route=%20', '/api/v1/runs?ingested=', '/api/v1/audit?decision=', '/api/v1/audit?verify=', '/api/v1/orgs/active/invites?status=']) {
    const response = await get(url);
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
  const all = json(await get('/api/v1/runs')).pagination.total;
  assert.ok(all > 0);
  assert.equal(json(await get('/api/v1/runs?status=')).pagination.total, all);
  for (const url of ['/api/v1/runs?status=bogus', '/api/v1/audit?decision=maybe', '/api/v1/orgs/active/invites?status=lost']) {
    assert.equal((await get(url)).statusCode, 400, url);
  }
});

test('every write endpoint takes no query parameter: its inputs are its path and its body, and one sent is a 400 naming it', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const routes = writeRoutes(app);
  // The walk of the router found them all (a sample, and the count as of this test).
  for (const route of ['POST /api/v1/users', 'DELETE /api/v1/users/:id', 'POST /api/v1/keys/:id/revoke', 'PUT /api/v1/settings', 'POST /api/v1/invites/:token/accept', 'POST /api/v1/runs/:id/feedback/metrics']) {
    assert.ok(routes.some(([method, path]) => `${method} ${path}` === route), `${route} in ${JSON.stringify(routes)}`);
  }
  assert.equal(routes.length, 30, JSON.stringify(routes));
  for (const [method, path] of routes) {
    const url = `${path.replace(/:\w+/g, 'x')}?tenant=other`;
    const response = await app.inject({ method: method as 'POST', url, headers: { ...admin, 'content-type': 'application/json' }, payload: '{}' });
    assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
    const { error } = json(response);
    assert.equal(error.code, 'invalid_request', `${method} ${url}`);
    assert.equal(error.message, 'tenant: unknown query parameter; this endpoint takes none', `${method} ${url}`);
    assert.deepEqual(error.details.issues.map((issue: { path: string }) => issue.path), ['tenant'], `${method} ${url}`);
  }
});

test('a write refused for its query parameter did nothing: POST /users?role=admin made no user, DELETE /users/:id?tenant= and a key revoke kept theirs', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const send = (method: 'POST' | 'DELETE', url: string, payload?: object) => app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  const users = async () => json(await app.inject({ url: '/api/v1/users', headers: admin })).users.map((user: { email: string }) => user.email);

  assert.equal((await send('POST', '/api/v1/users?role=admin', { email: 'ann@acme.io', tempPassword: 'Temp-password-123456' })).statusCode, 400);
  assert.deepEqual(await users(), []);

  const created = json(await send('POST', '/api/v1/users', { email: 'bob@acme.io', tempPassword: 'Temp-password-123456' }));
  assert.equal((await send('DELETE', `/api/v1/users/${created.user.id}?tenant=other`)).statusCode, 400);
  assert.deepEqual(await users(), ['bob@acme.io']);

  const key = json(await send('POST', '/api/v1/keys', { name: 'ci' })).key;
  assert.equal((await send('POST', `/api/v1/keys/${key.id}/revoke?tenant=other`)).statusCode, 400);
  const keys = json(await app.inject({ url: '/api/v1/keys', headers: admin })).keys;
  assert.equal(keys.find((listed: { id: string }) => listed.id === key.id).status, 'active');
});

test('a + in a query is a space (form encoding): a sign or an offset sent as + is a 400 that says to send %2B; %2B is read as +', async (t) => {
  const { get } = await setup(t);
  // `limit=+5` reads as ` 5` and `since=...T12:00:00+01:00` as `... 01:00`: refused, as documented, but the refusal
  // named only the forms taken, never the space the client did not send.
  const refused: Array<[string, string]> = [
    ['/api/v1/runs?limit=+5', 'limit'],
    ['/api/v1/audit?before=+9', 'before'],
    ['/api/v1/runs?since=2026-03-07T12:00:00+01:00', 'since'],
    ['/api/v1/savings?until=+002026-03-07', 'until'],
  ];
  for (const [url, name] of refused) {
    const error = await refusedNaming(get, url, name);
    assert.match(error.message, /a \+ in a query reads as a space: send it as %2B/, url);
  }
  // A value that no `+` would make valid is not told about it.
  assert.doesNotMatch((await refusedNaming(get, '/api/v1/runs?limit=0x10', 'limit')).message, /%2B/);
  assert.doesNotMatch((await refusedNaming(get, '/api/v1/runs?since=March+7+2026', 'since')).message, /%2B/);
  assert.doesNotMatch((await refusedNaming(get, '/api/v1/runs?limit=5+5', 'limit')).message, /%2B/);
  for (const url of ['/api/v1/runs?limit=%2B5', '/api/v1/runs?since=2026-03-07T12:00:00%2B01:00', '/api/v1/savings?until=%2B002026-03-07']) {
    const response = await get(url);
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  }
});
