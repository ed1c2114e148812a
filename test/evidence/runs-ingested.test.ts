/**
 * SDK-ingested prompts in the runs list (docs/evidence.md, "SDK ingestion"): recorded completed on the `live` route,
 * they are marked `ingested` and the `ingested` filter lists or leaves them out, its counts agreeing with /savings.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json } from '../support/build.ts';

const BOOT = 'bootstrap-token-runs-ingested-0001';
const admin = bearer(BOOT);

test('the runs list tells ingested prompts from live traffic: a row marker and an ingested filter whose counts match /savings', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const chat = async (content: string, model = 'gpt-4o-mini') =>
    (await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: admin, payload: { model, messages: [{ role: 'user', content }] } })).headers['x-svc-run-id'] as string;
  const ingest = async (prompt: string, headers = admin, metadata?: Record<string, string>) => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers, payload: { source: 'langchain', prompt, ...(metadata ? { metadata } : {}) } });
    assert.equal(response.statusCode, 201, response.body);
    return json(response).runId as string;
  };
  const live = await chat('asked twice');
  const hit = await chat('asked twice');
  const failed = await chat('boom', 'mock-5xx');
  const ingested = [await ingest('handled elsewhere'), await ingest('also elsewhere', admin, { model: 'gpt-4o-mini' })];
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'pinned', appId: 'sdk-app' } })).token;
  const pinnedIngested = await ingest('mine', bearer(pinned));
  const list = async (query: string, headers = admin) => {
    const response = await app.inject({ url: `/api/v1/runs${query}`, headers });
    assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
    return json(response);
  };
  const ids = (body: any) => body.runs.map((run: { id: string }) => run.id).sort();

  // Every row says whether it is an ingested prompt; its route stays one of the SPEC's.
  const all = await list('');
  const marker = Object.fromEntries(all.runs.map((run: any) => [run.id, [run.route, run.ingested]]));
  assert.deepEqual(marker, {
    [live]: ['live', false], [hit]: ['exact_cache', false], [failed]: ['live', false],
    [ingested[0]!]: ['live', true], [ingested[1]!]: ['live', true], [pinnedIngested]: ['live', true],
  });

  // route=live finds both; ingested=false leaves the prompts out, ingested=true lists only them.
  assert.deepEqual(ids(await list('?route=live')), [live, failed, ...ingested, pinnedIngested].sort());
  const served = await list('?route=live&ingested=false');
  assert.deepEqual(ids(served), [live, failed].sort());
  assert.equal(served.pagination.total, 2);
  // Each facet counts the other filters' runs (the route facet ignores route=live): the prompts are in none.
  assert.deepEqual(served.facets, { route: { live: 2, exact_cache: 1 }, status: { completed: 1, failed: 1 } });
  assert.deepEqual((await list('?ingested=false')).facets, { route: { live: 2, exact_cache: 1 }, status: { completed: 2, failed: 1 } });
  const only = await list('?ingested=true');
  assert.deepEqual(ids(only), [...ingested, pinnedIngested].sort());
  assert.deepEqual([only.pagination.total, only.facets], [3, { route: { live: 3 }, status: { completed: 3 } }]);

  // The same counts as /savings: its liveRuns are the completed live runs that are not ingested.
  const savings = json(await app.inject({ url: '/api/v1/savings', headers: admin }));
  assert.equal((await list('?route=live&status=completed&ingested=false')).pagination.total, savings.liveRuns);
  assert.equal(only.pagination.total, savings.ingestedRuns);

  // With the other filters (counted from the model's rollup rows, or from the runs since a time) and an app-pinned key.
  assert.deepEqual(ids(await list('?model=gpt-4o-mini&ingested=true')), [ingested[1]]);
  assert.deepEqual(ids(await list('?model=gpt-4o-mini&ingested=false')), [live, hit].sort());
  assert.equal((await list('?model=gpt-4o-mini&ingested=false')).pagination.total, 2);
  assert.deepEqual(ids(await list('?provider=langchain&ingested=false')), []);
  assert.deepEqual(ids(await list(`?since=${new Date(Date.now() - 60_000).toISOString()}&ingested=true`)), [...ingested, pinnedIngested].sort());
  assert.equal((await list(`?since=${new Date(Date.now() - 60_000).toISOString()}&ingested=false`)).pagination.total, 3);
  assert.deepEqual(ids(await list('?ingested=true', bearer(pinned))), [pinnedIngested]);
  assert.equal((await list('?ingested=false', bearer(pinned))).pagination.total, 0);

  const bad = await app.inject({ url: '/api/v1/runs?ingested=maybe', headers: admin });
  assert.equal(bad.statusCode, 400);
  assert.match(bad.body, /ingested/);
});
