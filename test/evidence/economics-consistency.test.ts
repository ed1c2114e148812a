/**
 * SPEC 4.7/4.9: /savings, /usage, attribution and each run's economics are sums of the same runs: costs, savings,
 * tokens and counts by status agree, and every one of them is scoped to the caller's organization (and app).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { ADMIN, BOOT, buildWithAdmin, operator } from '../support/accounts.ts';
import { bearer, json } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { runStart } from '../support/run-outcome.ts';

const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-9, `${what}: ${a} vs ${b}`);

test('savings, usage, attribution and every run economics agree over live, cache hit, failed, unpriced, blocked and running runs, per organization and app', async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    const text = JSON.stringify((request.body as any)?.messages ?? '');
    if (text.includes('please fail') || text.includes('fail over')) return sendJson(res, 500, { error: { message: 'upstream exploded' } });
    if ((request.body as any)?.stream) {
      return sendChunks(res, [
        contentChunk('streamed'),
        contentChunk('', { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
        { ...contentChunk(''), choices: [], usage: { prompt_tokens: 300, completion_tokens: 200, total_tokens: 500 } },
      ]);
    }
    return sendJson(res, 200, { ...completion('an answer'), usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } });
  });
  const fallback = await startFakeUpstream(t, (request, res) => {
    if (JSON.stringify((request.body as any)?.messages ?? '').includes('please fail')) return sendJson(res, 500, { error: { message: 'fallback exploded' } });
    return sendJson(res, 200, { ...completion('a fallback answer'), usage: { prompt_tokens: 200, completion_tokens: 100, total_tokens: 300 } });
  });
  const { app, services } = await buildWithAdmin(t, {
    CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl, CHATCOMP_FALLBACK_API_KEY: 'sk-fallback-0000', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl,
  });
  const admin = bearer(BOOT);
  const keyOf = async (headers: Record<string, string>, payload: Record<string, unknown>) =>
    bearer(json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers, payload })).token);
  const otherOrg = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: admin, payload: { name: 'Other', ownerEmail: ADMIN.email } })).org.id;
  const other = await keyOf(operator(BOOT, otherOrg), { name: 'other org' });
  const shop = await keyOf(admin, { name: 'shop', appId: 'shop' });
  const observe = await keyOf(admin, { name: 'observe', mode: 'observe' });

  const ask = async (headers: Record<string, string>, model: string, content: string, expected: number, stream = false) => {
    const payload = { model, messages: [{ role: 'user', content }], ...(stream ? { stream, stream_options: { include_usage: true } } : {}) };
    const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload });
    assert.equal(response.statusCode, expected, response.body);
    return response.headers['x-svc-run-id'] as string;
  };
  const runs = {
    default: [
      await ask(shop, 'gpt-4o-mini', 'q1', 200), // live
      await ask(shop, 'gpt-4o-mini', 'q1', 200), // its cache hit
      await ask(admin, 'gpt-4o-mini', 'q1', 200), // another app: live
      await ask(observe, 'gpt-4o-mini', 'q1', 200), // observe mode: live, ghost savings
      await ask(shop, 'gpt-4o-mini', 'please fail', 502), // failed
      await ask(admin, 'house-model-7', 'q2', 200), // unpriced
      await ask(admin, 'house-model-7', 'q2', 200), // its cache hit
      await ask(admin, 'gpt-4o-mini', 'fail over', 200), // served by the fallback
      await ask(shop, 'gpt-4o-mini', 'q3', 200, true), // streamed
      await ask(shop, 'gpt-4o-mini', 'q3', 200, true), // its cache hit, streamed
    ],
    other: [await ask(other, 'gpt-4o-mini', 'q1', 200), await ask(other, 'gpt-4o-mini', 'q1', 200)],
  };
  const start = runStart({ appId: 'shop' });
  services.ledger.start(start); // in flight
  const blocked = services.ledger.start(start);
  blocked.finish({
    status: 'blocked', route: 'blocked', provider: null, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, costUsd: 0, priced: true,
    routeExplanation: {
      route: 'blocked', reason: 'policy', rejectedAlternatives: [], policyVerdict: { decision: 'block', policy: 'p', reason: 'r' }, cache: [], artifact: null,
      estimatedSavings: { usd: 0, ms: 0, ghost: false }, fallback: null, provider: null, model: 'gpt-4o-mini', executionMethod: { id: 'blocked', referenceGrade: 'not_applicable' },
    },
  });
  runs.default.push(blocked.id);
  await services.store.flush();

  const get = async (url: string, headers: Record<string, string>) => {
    const response = await app.inject({ url, headers });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    return json(response);
  };
  const check = async (headers: Record<string, string>, ids: string[], label: string) => {
    const economics = await Promise.all(ids.map((id) => get(`/api/v1/runs/${id}/economics`, headers)));
    const sum = (pick: (e: any) => number) => economics.reduce((n, e) => n + pick(e), 0);
    const count = (test: (e: any) => boolean) => economics.filter(test).length;
    const savings = await get('/api/v1/savings', headers);
    const usage = await get('/api/v1/usage', headers);
    const attribution = await get('/api/v1/usage/attribution?routeLimit=200', headers);
    const completed = (route: string) => count((e) => e.status === 'completed' && e.route === route);
    assert.equal(savings.totalRuns, ids.length + 1 * Number(label === 'default' || label === 'shop'), `${label} totalRuns`);
    assert.equal(savings.liveRuns, completed('live'), `${label} liveRuns`);
    assert.equal(savings.exactCacheRuns, completed('exact_cache'), `${label} exactCacheRuns`);
    assert.equal(savings.failedRuns, count((e) => e.status === 'failed'), `${label} failedRuns`);
    assert.equal(savings.blockedRuns, count((e) => e.status === 'blocked'), `${label} blockedRuns`);
    const served = completed('live') + completed('exact_cache');
    close(savings.cacheHitRate, served ? completed('exact_cache') / served : 0, `${label} cacheHitRate`);
    for (const [what, totals] of [['savings', { cost: savings.totalCostUsd, saved: savings.totalSavedUsd, ghost: savings.ghostSavedUsd }],
      ['usage', { cost: usage.usage.costUsd, saved: usage.usage.savedUsd, ghost: usage.usage.ghostSavedUsd }],
      ['spend', { cost: usage.spend.costUsd, saved: usage.savings.savedUsd, ghost: usage.savings.ghostSavedUsd }],
      ['attribution', { cost: attribution.totals.costUsd, saved: attribution.totals.savedUsd, ghost: attribution.totals.ghostSavedUsd }]] as const) {
      close(totals.cost, sum((e) => e.cost.totalUsd), `${label} ${what} cost`);
      close(totals.saved, sum((e) => e.savings.usd), `${label} ${what} saved`);
      close(totals.ghost, sum((e) => e.savings.ghostUsd), `${label} ${what} ghost`);
    }
    const unpriced = count((e) => !e.priced);
    assert.equal(savings.unpricedRuns, unpriced, `${label} unpricedRuns`);
    assert.equal(usage.usage.unpricedRuns, unpriced, `${label} usage unpricedRuns`);
    for (const entry of [usage.usage, attribution.totals]) {
      assert.equal(entry.runs, ids.length, `${label} finished runs`);
      assert.equal(entry.totalTokens, sum((e) => e.tokens.customer.totalTokens), `${label} customer tokens`);
      assert.equal(entry.actualTotalTokens, sum((e) => e.tokens.actual.totalTokens), `${label} actual tokens`);
    }
    assert.equal(attribution.byRoute.reduce((n: number, e: any) => n + e.runs, 0), ids.length, `${label} byRoute`);
    return { savings, usage, attribution };
  };
  // The traffic is what it says: hits were served from the cache, the fallback after a failed attempt.
  const routeOf = async (id: string) => (await get(`/api/v1/runs/${id}/economics`, admin)).route;
  assert.deepEqual(await Promise.all([1, 2, 3, 6, 8, 9].map((i) => routeOf(runs.default[i]!))), ['exact_cache', 'live', 'live', 'exact_cache', 'live', 'exact_cache']);
  assert.equal((await get(`/api/v1/runs/${runs.default[7]}/economics`, admin)).attempts.served.length, 2);
  await check(admin, runs.default, 'default');
  await check(shop, [runs.default[0]!, runs.default[1]!, runs.default[4]!, runs.default[8]!, runs.default[9]!, blocked.id], 'shop');
  await check(other, runs.other, 'other');
  // Never another organization's or app's run.
  assert.equal((await app.inject({ url: `/api/v1/runs/${runs.default[0]}/economics`, headers: other })).statusCode, 404);
  assert.equal((await app.inject({ url: `/api/v1/runs/${runs.other[0]}/economics`, headers: admin })).statusCode, 404);
  assert.equal((await app.inject({ url: `/api/v1/runs/${runs.default[2]}/economics`, headers: shop })).statusCode, 404);
});
