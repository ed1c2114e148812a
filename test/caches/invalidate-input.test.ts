/**
 * `POST /api/v1/cache/invalidate` (SPEC 4.11, 8) refuses what it cannot read as the request it says: its input never
 * widens the delete to the whole tenant's cache.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json } from '../support/build.ts';

const BOOT = 'bootstrap-token-cache-invalidate-01';
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'kept unless invalidated' }] };

async function primed(t: test.TestContext) {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const chat = () => app.inject({ method: 'POST', url: '/v1/chat/completions', headers: bearer(BOOT), payload: CHAT });
  await chat();
  const route = async () => (await chat()).headers['x-svc-route'];
  assert.equal(await route(), 'exact_cache');
  return { app, route };
}

test('a JSON null body is a 400 as any other body that is not an object, never the tenant-wide clear of an omitted body', async (t) => {
  const { app, route } = await primed(t);
  const response = await app.inject({
    method: 'POST',
    url: '/api/v1/cache/invalidate',
    headers: { ...bearer(BOOT), 'content-type': 'application/json' },
    payload: 'null',
  });
  assert.equal(response.statusCode, 400, response.body);
  assert.equal(json(response).error.code, 'invalid_request');
  assert.equal(await route(), 'exact_cache', 'nothing was invalidated');
});

test('a request without a body still clears every tier (the omitted cacheType of SPEC 4.11)', async (t) => {
  const { app, route } = await primed(t);
  const response = await app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', headers: bearer(BOOT) });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(json(response).invalidated, 1);
  assert.equal(await route(), 'live');
});

test('a query parameter is a 400 naming it, never dropped: ?cacheType=som without a body cleared every tier', async (t) => {
  const { app, route } = await primed(t);
  for (const url of ['/api/v1/cache/invalidate?cacheType=som', '/api/v1/cache/invalidate?keyPrefix=messages:']) {
    const response = await app.inject({ method: 'POST', url, headers: bearer(BOOT) });
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
    assert.equal(json(response).error.code, 'invalid_request');
    assert.match(json(response).error.message, /unknown query parameter; this endpoint takes none/);
  }
  assert.equal(await route(), 'exact_cache', 'nothing was invalidated');
});
