/**
 * Integer query parameters of the runs endpoints (and every list's limit/offset): decimal digits only, as the
 * instants of `since` are; a blank value is absent, as a blank filter is.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json, newChatRun } from '../support/build.ts';

const BOOT = 'bootstrap-token-query-integers-0001';
const admin = bearer(BOOT);

async function setup(t: any) {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const runId = await newChatRun(built.app, admin);
  return { get: (url: string) => built.app.inject({ url, headers: admin }), runId };
}

test('hexadecimal, exponent, binary and padded numbers are not integers: 400 naming the parameter', async (t) => {
  const { get, runId } = await setup(t);
  const urls = [
    '/api/v1/runs?limit=0x10',
    '/api/v1/runs?offset=1e3',
    '/api/v1/runs?limit=0b11',
    '/api/v1/runs?limit=%205',
    '/api/v1/runs?offset=5.0',
    `/api/v1/runs/${runId}/events?limit=0x10`,
    `/api/v1/runs/${runId}/events?before=1e2`,
    `/api/v1/runs/${runId}?sideEffectLimit=0x1`,
    '/api/v1/usage/attribution?routeLimit=0x10',
    '/api/v1/keys?limit=1e1',
    '/api/v1/audit?limit=0x10',
  ];
  for (const url of urls) {
    const response = await get(url);
    assert.equal(response.statusCode, 400, `${url}: ${response.body}`);
    const name = new URL(url, 'http://x').searchParams.keys().next().value!;
    assert.equal(json(response).error.code, 'invalid_request', url);
    assert.match(json(response).error.message, new RegExp(`^${name}: expected an integer \\(decimal digits\\)`), url);
  }
});

test('a blank integer parameter takes its default, as a blank filter is no filter; -1 and a signed +5 are read as written', async (t) => {
  const { get, runId } = await setup(t);
  const listed = json(await get('/api/v1/runs?limit=&offset='));
  assert.deepEqual(listed.pagination, { limit: 50, offset: 0, total: 1, hasMore: false, nextBefore: null });
  const events = json(await get(`/api/v1/runs/${runId}/events?limit=&before=`));
  assert.equal(events.window.limit, 100);
  assert.equal(json(await get('/api/v1/runs?limit=%2B5')).pagination.limit, 5);
  const negative = await get('/api/v1/runs?offset=-1');
  assert.equal(negative.statusCode, 400);
  assert.match(json(negative).error.message, /^offset: Too small/);
});
