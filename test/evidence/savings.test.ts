/** SPEC 4.7/4.9: savings counting rules, month-to-date usage, attribution dimensions and their windows. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { MovableClock } from '../support/accounts.ts';
import { bearer, build, json } from '../support/build.ts';
import { completion, contentChunk, embeddingsAnswer, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { runStart } from '../support/run-outcome.ts';

const BOOT = 'bootstrap-token-savings-tests-00001';
const admin = bearer(BOOT);

async function setup(t: any) {
  const upstream = await startFakeUpstream(t, (request, res) => {
    const text = JSON.stringify((request.body as any)?.messages ?? '');
    if (text.includes('please fail')) return sendJson(res, 500, { error: { message: 'upstream exploded' } });
    const answer = completion('priced answer');
    answer.usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
    return sendJson(res, 200, answer);
  });
  const built = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const chat = (content: string, headers: Record<string, string> = admin) =>
    built.app.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });
  const get = async (url: string, headers: Record<string, string> = admin) => {
    const response = await built.app.inject({ url, headers });
    return { status: response.statusCode, body: json(response) };
  };
  return { ...built, upstream, chat, get };
}

const finishOutcome = (route: string, status: string) =>
  ({
    status,
    route,
    provider: null,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    costUsd: 0,
    priced: true,
    routeExplanation: {
      route, reason: 'test', rejectedAlternatives: [], policyVerdict: { decision: 'allow', policy: null, reason: null }, cache: [],
      artifact: null, estimatedSavings: { usd: 0, ms: 0, ghost: false }, fallback: null, provider: null, model: 'x',
      executionMethod: { id: 'test', referenceGrade: 'not_applicable' },
    },
  }) as any;

test('savings: every counter follows the counting rules', async (t) => {
  const { app, services, chat, get } = await setup(t);
  const start = runStart();

  assert.equal((await chat('the same question')).headers['x-svc-route'], 'live');
  assert.equal((await chat('the same question')).headers['x-svc-route'], 'exact_cache');
  assert.equal((await chat('please fail')).statusCode, 502);
  const observeKey = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'shadow', mode: 'observe' } })).token;
  assert.equal((await chat('the same question', bearer(observeKey))).headers['x-svc-route'], 'live');
  services.ledger.start(start); // in flight, never finished
  services.ledger.start(start).finish(finishOutcome('semantic_cache', 'completed'));
  services.ledger.start(start).finish(finishOutcome('live', 'paused'));

  const { status, body } = await get('/api/v1/savings');
  assert.equal(status, 200);
  const liveCost = (1000 * 0.15 + 500 * 0.6) / 1_000_000;
  assert.equal(body.totalRuns, 7);
  assert.equal(body.liveRuns, 2, 'completed live runs (optimize + observe)');
  assert.equal(body.optimizedRuns, 1);
  assert.equal(body.exactCacheRuns, 1);
  assert.equal(body.failedRuns, 1);
  assert.equal(body.runningRuns, 1);
  assert.equal(body.blockedRuns, 0);
  assert.equal(body.unknownRuns, 1, 'a completed run with a route svc does not know');
  assert.equal(body.unknownStatusRuns, 1);
  assert.ok(Math.abs(body.totalCostUsd - 2 * liveCost) < 1e-9, `cost ${body.totalCostUsd}`);
  assert.ok(Math.abs(body.totalSavedUsd - liveCost) < 1e-9);
  assert.ok(Math.abs(body.ghostSavedUsd - liveCost) < 1e-9, 'observe mode would have saved the cached answer');
  assert.ok(Math.abs(body.cacheHitRate - 1 / 3) < 1e-9, 'failed, running and unknown runs stay out of the denominator');
  assert.equal(body.artifactHitRate, 0);
  assert.equal(body.spendAvoidedUsd, body.totalSavedUsd);
  assert.deepEqual(body.webContext, { snapshots: 0, tokensSavedEstimate: 0 });

  // An app-pinned key sees its app only.
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'pinned', appId: 'other-app' } })).token;
  const scoped = await get('/api/v1/savings', bearer(pinned));
  assert.equal(scoped.body.totalRuns, 0);

  assert.equal((await get('/api/v1/savings?since=not-a-date')).status, 400);
  assert.equal((await get('/api/v1/savings?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z')).status, 400);
  const future = await get(`/api/v1/savings?since=${Date.now() + 3 * 86_400_000}`);
  assert.equal(future.body.liveRuns, 0, 'a window after every run is empty');
});

test('usage: month-to-date totals, quota, spend, savings and a daily trend', async (t) => {
  const { chat, get } = await setup(t);
  await chat('usage one');
  await chat('usage one');
  const { status, body } = await get('/api/v1/usage');
  assert.equal(status, 200);
  assert.equal(body.usage.runs, 2);
  assert.equal(body.usage.promptTokens, 2000, 'the cache hit reports the original usage');
  assert.equal(body.quota.plan, 'self_hosted');
  assert.equal(body.quota.used, 2);
  assert.ok(body.spend.costUsd > 0);
  assert.ok(body.savings.savedUsd > 0);
  const today = new Date().toISOString().slice(0, 10);
  assert.equal(body.trend.at(-1).date, today);
  assert.equal(body.trend.at(-1).runs, 2);
  assert.equal(body.trend.length, new Date().getUTCDate(), 'one entry per day of the month so far');
  assert.ok(body.trend.slice(0, -1).every((day: any) => day.runs === 0));
});

test('attribution: every dimension, ranked by cost, with <dim>Limit/<dim>Offset windows', async (t) => {
  const { chat, get } = await setup(t);
  for (const [app, subject] of [['checkout', 'u1'], ['checkout', 'u2'], ['search', 'u1']] as const) {
    assert.equal((await chat(`attr ${app} ${subject}`, { ...admin, 'x-svc-app': app, 'x-svc-subject': subject, 'x-svc-agent': 'bot' })).statusCode, 200);
  }
  const { status, body } = await get('/api/v1/usage/attribution?appLimit=1');
  assert.equal(status, 200);
  assert.equal(body.totals.runs, 3);
  for (const dim of ['Route', 'Workflow', 'Subject', 'Fingerprint', 'App', 'Pattern', 'Model', 'Agent', 'ExecutionMethod', 'Reason', 'Fallback']) {
    assert.ok(Array.isArray(body[`by${dim}`]), `by${dim}`);
    assert.equal(typeof body[`by${dim}Window`].total, 'number', `by${dim}Window`);
    const sum = body[`by${dim}`].reduce((n: number, entry: any) => n + entry.runs, 0);
    if (!body[`by${dim}Window`].hasMore) assert.equal(sum, 3, `by${dim} covers every run`);
  }
  assert.deepEqual(body.byApp.map((e: any) => e.value), ['checkout']);
  assert.deepEqual(body.byAppWindow, { limit: 1, offset: 0, total: 2, hasMore: true, nextOffset: 1 });
  const next = await get('/api/v1/usage/attribution?appLimit=1&appOffset=1');
  assert.deepEqual(next.body.byApp.map((e: any) => e.value), ['search']);
  assert.equal(next.body.byAppWindow.hasMore, false);
  assert.deepEqual(body.bySubject.map((e: any) => [e.value, e.runs]), [['u1', 2], ['u2', 1]]);
  assert.deepEqual(body.byRoute.map((e: any) => e.value), ['live']);
  assert.deepEqual(body.byWorkflow, [{ ...body.byWorkflow[0], value: null, runs: 3 }], 'no workflows yet: one unattributed bucket');
  assert.deepEqual(body.byExecutionMethod.map((e: any) => e.value), ['live_model']);
  assert.deepEqual(body.byReason.map((e: any) => e.value), ['live']);
  assert.deepEqual(body.byFallback.map((e: any) => e.value), [null]);
  assert.equal(body.byFingerprint.length, 1, 'same template (no system prompt, no tools, same model)');
  assert.match(body.byFingerprint[0].value, /^fp_[0-9a-f]{24}$/);
  assert.equal(body.byApp[0].costShare, 0.666666667);

  for (const bad of ['routeLimit=0', 'routeLimit=201', 'modelOffset=-1', 'agentLimit=abc', 'since=yesterday']) {
    assert.equal((await get(`/api/v1/usage/attribution?${bad}`)).status, 400, bad);
  }
});

test('an instant outside the years 0000-9999 is 400 invalid_request naming its parameter, on every endpoint taking one', async (t) => {
  const { get } = await setup(t);
  const outOfRange: Array<[string, string]> = [
    ['since', '99999999999999999999999'],
    ['until', '8640000000000000'],
    ['since', '8640086400000000'],
    ['until', '%2B275760-09-13T00:00:00Z'],
    ['since', '9007199254740993'],
    ['since', '-000001-12-31T00:00:00Z'],
    ['until', '253402300800000'], // 10000-01-01T00:00:00Z
    ['since', '-62167219200001'], // a millisecond before 0000-01-01T00:00:00Z
    ['until', '%2B999999-12-31'], // past what a JS date reaches
    ['since', '-999999-01-01T00:00Z'],
  ];
  for (const path of ['/api/v1/savings', '/api/v1/usage/attribution', '/api/v1/runs']) {
    for (const [param, value] of outOfRange) {
      if (path === '/api/v1/runs' && param === 'until') continue; // the runs list takes `since` only
      const { status, body } = await get(`${path}?${param}=${value}`);
      assert.equal(status, 400, `${path}?${param}=${value}`);
      assert.equal(body.error.code, 'invalid_request');
      assert.match(body.error.message, new RegExp(`^${param}: must be between 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z$`));
    }
  }
  // The edges themselves are instants like any other.
  const edges = await get('/api/v1/savings?since=0000-01-01T00:00:00Z&until=253402300799999');
  assert.equal(edges.status, 200);
  assert.deepEqual(edges.body.window, { since: '0000-01-01T00:00:00.000Z', until: '9999-12-31T23:59:59.999Z', granularity: 'utc_day' });
  assert.equal((await get('/api/v1/usage/attribution?until=9999-12-31T23:59:59.999Z')).status, 200);
  assert.equal((await get('/api/v1/runs?since=9999-12-31T23:59:59.999Z')).status, 200);
});

test('an instant in none of the accepted forms is 400 invalid_request naming its parameter and the forms, on every endpoint taking one', async (t) => {
  const { get } = await setup(t);
  // Date.parse reads each of these as a date (V8's legacy formats: '1.5', '-1.5' and '+1' in 2001, '2026-02-30' as
  // March 2), but the last three; none is epoch milliseconds or ISO 8601.
  const hostile = [
    '1.5', '-1.5', '+1', 'March 7 2026', '2026/11/26', 'Sat, 07 Mar 2026 00:00:00 GMT', '2026-02-30', '2025-02-29', '2026-3-7',
    '2026-03-07 12:00:00Z', '2026-03-07t12:00:00z', '2026-03-07T12:00:00+0100', '-000000-01-01', '1e3', '0x10', '2026-03-07T12Z',
  ];
  for (const path of ['/api/v1/savings', '/api/v1/usage/attribution', '/api/v1/runs']) {
    for (const param of ['since', 'until']) {
      if (path === '/api/v1/runs' && param === 'until') continue; // the runs list takes `since` only
      for (const value of hostile) {
        const { status, body } = await get(`${path}?${param}=${encodeURIComponent(value)}`);
        assert.equal(status, 400, `${path}?${param}=${value}`);
        assert.equal(body.error.code, 'invalid_request');
        assert.equal(
          body.error.message,
          `${param}: expected an ISO 8601 date or timestamp (2026-03-07, 2026-03-07T12:00:00Z, 2026-03-07T12:00:00.000+01:00) or epoch milliseconds (an integer, negative before 1970)`,
          `${path}?${param}=${value}`,
        );
      }
    }
  }
});

test('each accepted form of an instant is read as the instant it names', async (t) => {
  const { get } = await setup(t);
  /** Epoch ms of a UTC time; setUTCFullYear, unlike Date.UTC, takes the years 0-99 as they are. */
  const utc = (year: number, month: number, day: number, hours = 0, minutes = 0, seconds = 0, ms = 0) => {
    const date = new Date(0);
    date.setUTCFullYear(year, month - 1, day);
    date.setUTCHours(hours, minutes, seconds, ms);
    return date.getTime();
  };
  const forms: Array<[string, number]> = [
    ['0', 0],
    ['-1', -1], // 1969-12-31T23:59:59.999Z, not 2001
    [' 1741305600000 ', utc(2025, 3, 7)],
    ['-62167219200000', utc(0, 1, 1)],
    ['2025', 2025], // digits alone are always epoch milliseconds, never a year
    ['+002025', utc(2025, 1, 1)],
    ['2025-03', utc(2025, 3, 1)],
    ['2025-03-07', utc(2025, 3, 7)],
    ['2024-02-29', utc(2024, 2, 29)],
    ['0000-02-29', utc(0, 2, 29)],
    ['+002025-03-07T00:00:00Z', utc(2025, 3, 7)],
    ['2025-03-07T23:30Z', utc(2025, 3, 7, 23, 30)],
    ['2025-03-07T23:30:15Z', utc(2025, 3, 7, 23, 30, 15)],
    ['2025-03-07T23:30:15.250Z', utc(2025, 3, 7, 23, 30, 15, 250)],
    ['2025-03-07T23:30:00-02:00', utc(2025, 3, 8, 1, 30)],
    ['2025-03-07T12:00', new Date(2025, 2, 7, 12).getTime()], // no offset: the server's local time
  ];
  const endOfUtcDay = (ms: number) => new Date(Math.floor(ms / 86_400_000) * 86_400_000 + 86_400_000 - 1).toISOString();
  for (const [value, ms] of forms) {
    const query = encodeURIComponent(value);
    const { status, body } = await get(`/api/v1/savings?until=${query}`);
    assert.equal(status, 200, value);
    assert.equal(body.window.until, endOfUtcDay(ms), value);
    for (const path of ['/api/v1/savings', '/api/v1/usage/attribution', '/api/v1/runs']) {
      assert.equal((await get(`${path}?since=${query}`)).status, 200, `${path}?since=${value}`);
    }
  }
});

test('a window whose since is after its until is 400 on /savings and /usage/attribution alike, naming the since query parameter', async (t) => {
  const { get } = await setup(t);
  for (const path of ['/api/v1/savings', '/api/v1/usage/attribution']) {
    const { status, body } = await get(`${path}?since=2030-01-01&until=2020-01-01`);
    assert.equal(status, 400, path);
    assert.equal(body.error.code, 'invalid_request');
    assert.equal(body.error.message, 'since: must not be after until', path);
    assert.deepEqual(body.error.details.issues, [{ path: 'since', message: 'must not be after until' }]);
    assert.equal((await get(`${path}?since=2020-01-01&until=2020-01-01`)).status, 200, `${path}: a one-day window`);
  }
});

test('an upstream usage whose counts are not token counts is estimated locally: the run finishes, and no cost or total is NaN, negative or infinite', async (t) => {
  const odd: unknown[] = [
    { prompt_tokens: 1000 },
    { prompt_tokens: -1000, completion_tokens: 500, total_tokens: -500 },
    { prompt_tokens: '1000', completion_tokens: '500', total_tokens: 1500 },
    { prompt_tokens: 1e308, completion_tokens: 1e308, total_tokens: 1e308 },
    { prompt_tokens: 1000.5, completion_tokens: 500, total_tokens: 1500.5 },
    'junk',
  ];
  let usage: unknown = null;
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (!(request.body as any).stream) return sendJson(res, 200, { ...completion('an answer'), usage });
    return sendChunks(res, [contentChunk('an answer', { choices: [{ index: 0, delta: { content: 'an answer' }, finish_reason: 'stop' }] }), { ...contentChunk(''), choices: [], usage }]);
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const runIds: string[] = [];
  for (const [index, reported] of odd.entries()) {
    usage = reported;
    for (const stream of [false, true]) {
      for (let again = 0; again < 2; again++) {
        const response = await app.inject({
          method: 'POST',
          url: '/v1/chat/completions',
          headers: admin,
          payload: { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `odd usage ${index} ${stream}` }] },
        });
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers['x-svc-route'], again ? 'exact_cache' : 'live', `${JSON.stringify(reported)}, stream ${stream}: the answer was cached`);
        runIds.push(String(response.headers['x-svc-run-id']));
      }
    }
  }
  const runs = await Promise.all(runIds.map(async (id) => json(await app.inject({ url: `/api/v1/runs/${id}`, headers: admin })).run));
  const countable = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  for (const run of runs) {
    assert.equal(run.status, 'completed', `${run.id} finished`);
    assert.ok(Number.isFinite(run.costUsd) && run.costUsd >= 0, `${run.id} cost ${run.costUsd}`);
    assert.ok(countable(run.usage.promptTokens) && countable(run.usage.completionTokens), JSON.stringify(run.usage));
  }
  // The prompt count the upstream did report is kept; the missing one is estimated.
  assert.equal(runs[0].usage.promptTokens, 1000);
  const cost = runs.reduce((sum, run) => sum + run.costUsd, 0);
  const tokens = runs.reduce((sum, run) => sum + run.usage.promptTokens + run.usage.completionTokens, 0);
  const savings = json(await app.inject({ url: '/api/v1/savings', headers: admin }));
  assert.equal(savings.totalRuns, runs.length);
  assert.equal(savings.runningRuns, 0);
  assert.ok(Math.abs(savings.totalCostUsd - cost) < 1e-9, `${savings.totalCostUsd} vs ${cost}`);
  assert.ok(savings.totalSavedUsd >= 0);
  const month = json(await app.inject({ url: '/api/v1/usage', headers: admin })).usage;
  assert.equal(month.totalTokens, tokens);
  assert.ok(Math.abs(month.costUsd - cost) < 1e-9);
});

test('a failed observe-mode run is credited no ghost savings: /savings, /usage, attribution and its economics agree', async (t) => {
  let failing = false;
  const upstream = await startFakeUpstream(t, (_request, res) => {
    if (failing) return sendJson(res, 500, { error: { message: 'upstream exploded' } });
    return sendJson(res, 200, { ...completion('an answer'), usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } });
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const observe = bearer(json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'shadow', mode: 'observe' } })).token);
  const chat = (headers: Record<string, string>) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', headers, payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'cached once' }] } });
  assert.equal((await chat(admin)).headers['x-svc-route'], 'live');
  const ghost = (1000 * 0.15 + 500 * 0.6) / 1_000_000;
  const completed = await chat(observe);
  assert.equal(completed.statusCode, 200, 'observe mode answers live, a cached answer exists');
  failing = true;
  const failed = await chat(observe);
  assert.equal(failed.statusCode, 502);

  const get = async (url: string) => json(await app.inject({ url, headers: admin }));
  const savings = await get('/api/v1/savings');
  assert.ok(Math.abs(savings.ghostSavedUsd - ghost) < 1e-12, `savings ${savings.ghostSavedUsd}`);
  const usage = await get('/api/v1/usage');
  assert.equal(usage.usage.ghostSavedUsd, savings.ghostSavedUsd);
  assert.equal(usage.savings.ghostSavedUsd, savings.ghostSavedUsd);
  const attribution = await get('/api/v1/usage/attribution');
  assert.equal(attribution.totals.ghostSavedUsd, savings.ghostSavedUsd);
  assert.deepEqual(
    attribution.byReason.map((entry: any) => [entry.value, entry.ghostSavedUsd]),
    [['live', savings.ghostSavedUsd], ['failed:upstream_error', 0]],
  );
  assert.equal((await get(`/api/v1/runs/${failed.headers['x-svc-run-id']}/economics`)).savings.ghostUsd, 0);
  assert.equal((await get(`/api/v1/runs/${completed.headers['x-svc-run-id']}/economics`)).savings.ghostUsd, savings.ghostSavedUsd);
});

test('runs in flight count in the windows they were created in: not in a window before them, nor in this month\'s usage when started last month', async (t) => {
  const { services, get } = await setup(t);
  const start = runStart();
  const now = Date.now();
  const monthStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
  services.ledger.start(start); // in flight, started now
  services.ledger.start({ ...start, startedAt: monthStart - 1 }); // in flight since the last millisecond of last month

  const all = await get('/api/v1/savings');
  assert.equal(all.body.runningRuns, 2);
  assert.equal(all.body.totalRuns, 2);
  const before = await get('/api/v1/savings?since=2020-01-01&until=2020-01-31');
  assert.equal(before.body.runningRuns, 0, 'a window of 2020 holds no run created today');
  assert.equal(before.body.totalRuns, 0);
  const lastMonth = await get(`/api/v1/savings?until=${monthStart - 1}`);
  assert.equal(lastMonth.body.runningRuns, 1);
  const today = await get(`/api/v1/savings?since=${now}`);
  assert.equal(today.body.runningRuns, 1);
  assert.equal(today.body.totalRuns, 1);

  const usage = await get('/api/v1/usage');
  assert.equal(usage.body.usage.runningRuns, 1, 'month to date: the run started last month is not this month\'s');
  assert.equal(usage.body.quota.used, 1);
});

test('an answer the upstream reports no usage for is priced on its output too, buffered as streamed', async (t) => {
  const text = 'The capital of Norway is Oslo, a city on the Oslofjord with about seven hundred thousand people.';
  const call = { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"city":"Oslo","fields":["population","area"]}' } };
  const upstream = await startFakeUpstream(t, (request, res) => {
    const body = request.body as any;
    const tools = body.tools !== undefined;
    if (body.stream) {
      const delta = tools ? { tool_calls: [{ index: 0, ...call }] } : { content: text };
      return sendChunks(res, [contentChunk('', { choices: [{ index: 0, delta, finish_reason: tools ? 'tool_calls' : 'stop' }] })]);
    }
    const answer: any = completion(text);
    delete answer.usage;
    if (tools) answer.choices[0] = { ...answer.choices[0], message: { role: 'assistant', content: null, refusal: null, tool_calls: [call] }, finish_reason: 'tool_calls' };
    return sendJson(res, 200, answer);
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const tools = [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { city: { type: 'string' }, fields: { type: 'array', items: { type: 'string' } } } } } }];
  const run = async (stream: boolean, withTools: boolean) => {
    const response = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: admin,
      payload: { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `tell me about Oslo ${stream}` }], ...(withTools ? { tools } : {}) },
    });
    assert.equal(response.statusCode, 200);
    return json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}`, headers: admin })).run;
  };
  for (const withTools of [false, true]) {
    const buffered = await run(false, withTools);
    const streamed = await run(true, withTools);
    assert.ok(streamed.usage.completionTokens > 5, `tools ${withTools}: the stream's output is counted (${streamed.usage.completionTokens})`);
    assert.equal(buffered.usage.completionTokens, streamed.usage.completionTokens, `tools ${withTools}: the same answer, the same output tokens`);
    assert.equal(buffered.costUsd, streamed.costUsd, `tools ${withTools}: the same answer, the same cost`);
  }
});

test('a buffered answer refused for an invalid tool call is still paid for: its run, attempt, economics and /savings count its cost', async (t) => {
  const usage = { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 };
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (request.url.endsWith('/responses')) {
      return sendJson(res, 200, {
        id: 'resp_1', object: 'response', created_at: 1, status: 'completed', model: 'gpt-4o-mini',
        output: [{ type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'undeclared', arguments: '{}', status: 'completed' }],
        usage: { input_tokens: 1000, output_tokens: 500, total_tokens: 1500 },
      });
    }
    const answer: any = completion('');
    answer.choices[0] = { ...answer.choices[0], message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'undeclared', arguments: '{}' } }] }, finish_reason: 'tool_calls' };
    return sendJson(res, 200, { ...answer, usage });
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const cost = (1000 * 0.15 + 500 * 0.6) / 1_000_000;
  const requests = [
    { url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }] } },
    { url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }] } },
  ];
  for (const { url, payload } of requests) {
    const response = await app.inject({ method: 'POST', url, headers: admin, payload });
    assert.equal(response.statusCode, 502, url);
    const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}`, headers: admin }));
    assert.equal(detail.run.error.kind, 'invalid_tool_call', url);
    assert.equal(detail.run.costUsd, cost, url);
    assert.deepEqual(detail.run.usage, { promptTokens: 1000, completionTokens: 500, totalTokens: 1500 }, url);
    assert.deepEqual(detail.attempts.map((attempt: any) => [attempt.outcome, attempt.costUsd]), [['failed', cost]], url);
    const economics = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}/economics`, headers: admin }));
    assert.equal(economics.cost.providerUsd, cost, url);
  }
  const savings = json(await app.inject({ url: '/api/v1/savings', headers: admin }));
  assert.equal(savings.failedRuns, 2);
  assert.ok(Math.abs(savings.totalCostUsd - 2 * cost) < 1e-12, `${savings.totalCostUsd}`);
});

test('attribution given only an until reads the month to date of that until, not an inverted window from this month\'s start', async (t) => {
  let now = Date.UTC(2026, 9, 10, 12);
  const { app } = await build(t, { overrides: { clock: { now: () => now } } });
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'in October' }] } })).statusCode, 200);
  now = Date.UTC(2026, 10, 26, 12);
  const get = async (query: string) => json(await app.inject({ url: `/api/v1/usage/attribution${query}` }));
  const october = await get('?until=2026-10-15');
  assert.deepEqual(october.window, { since: '2026-10-01T00:00:00.000Z', until: '2026-10-15T23:59:59.999Z', granularity: 'utc_day' });
  assert.equal(october.totals.runs, 1);
  const monthToDate = await get('');
  assert.deepEqual(monthToDate.window, { since: '2026-11-01T00:00:00.000Z', until: '2026-11-26T23:59:59.999Z', granularity: 'utc_day' });
  assert.equal(monthToDate.totals.runs, 0);
  assert.equal((await get('?until=2026-10-09')).totals.runs, 0);
});

test('attribution given only an until in the years 0000-0099 reads that month, not one of 1900-1999 (an inverted window)', async (t) => {
  const { app } = await build(t);
  const get = async (query: string) => json(await app.inject({ url: `/api/v1/usage/attribution${query}` }));
  assert.deepEqual((await get('?until=0050-06-15')).window, { since: '0050-06-01T00:00:00.000Z', until: '0050-06-15T23:59:59.999Z', granularity: 'utc_day' });
  assert.deepEqual((await get('?until=0000-01-01')).window, { since: '0000-01-01T00:00:00.000Z', until: '0000-01-01T23:59:59.999Z', granularity: 'utc_day' });
});

test('a since after today without an until is an empty window of its own day, not an inverted one ending today', async (t) => {
  const now = Date.UTC(2026, 10, 26, 12);
  const { app } = await build(t, { overrides: { clock: { now: () => now } } });
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'today' }] } })).statusCode, 200);
  const window = { since: '2030-01-01T00:00:00.000Z', until: '2030-01-01T23:59:59.999Z', granularity: 'utc_day' };
  const savings = json(await app.inject({ url: '/api/v1/savings?since=2030-01-01' }));
  assert.deepEqual(savings.window, window);
  assert.equal(savings.totalRuns, 0);
  const attribution = json(await app.inject({ url: '/api/v1/usage/attribution?since=2030-01-01' }));
  assert.deepEqual(attribution.window, window);
  assert.equal(attribution.totals.runs, 0);
});

test('runs whose cost is not firm are counted as unpriced in /savings, /usage and attribution, whose cost totals then say they are lower bounds', async (t) => {
  const { app, get } = await setup(t);
  const ask = (model: string, content: string) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', headers: { ...admin, 'x-svc-app': model }, payload: { model, messages: [{ role: 'user', content }] } });
  // Priced: a model of the price table, live then its cache hit.
  assert.equal((await ask('gpt-4o-mini', 'priced question')).headers['x-svc-route'], 'live');
  assert.equal((await ask('gpt-4o-mini', 'priced question')).headers['x-svc-route'], 'exact_cache');
  // Not priced: a model without a list price, live then its cache hit (what the hit saved is unknown too).
  const unpriced = await ask('house-model-7', 'unpriced question');
  assert.equal(unpriced.headers['x-svc-route'], 'live');
  assert.equal((await get(`/api/v1/runs/${unpriced.headers['x-svc-run-id']}/economics`)).body.priced, false);
  assert.equal((await ask('house-model-7', 'unpriced question')).headers['x-svc-route'], 'exact_cache');

  const savings = (await get('/api/v1/savings')).body;
  assert.equal(savings.totalRuns, 4);
  assert.equal(savings.unpricedRuns, 2);
  assert.equal(savings.costIsLowerBound, true);

  const usage = (await get('/api/v1/usage')).body;
  assert.equal(usage.usage.unpricedRuns, 2);
  assert.equal(usage.usage.costIsLowerBound, true);
  assert.equal(usage.spend.unpricedRuns, 2);
  assert.equal(usage.spend.costIsLowerBound, true);
  assert.equal(usage.trend.at(-1).unpricedRuns, 2);

  const attribution = (await get('/api/v1/usage/attribution')).body;
  assert.equal(attribution.totals.unpricedRuns, 2);
  assert.equal(attribution.totals.costIsLowerBound, true);
  assert.deepEqual(
    attribution.byModel.map((entry: any) => [entry.value, entry.runs, entry.unpricedRuns, entry.costIsLowerBound]),
    [['gpt-4o-mini', 2, 0, false], ['house-model-7', 2, 2, true]],
  );
  assert.deepEqual(
    attribution.byRoute.map((entry: any) => [entry.value, entry.unpricedRuns]).sort(),
    [['exact_cache', 1], ['live', 1]],
  );

  // A window of priced runs only says its cost is firm.
  const pinned = bearer(json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'priced app', appId: 'gpt-4o-mini' } })).token);
  const firm = (await get('/api/v1/savings', pinned)).body;
  assert.equal(firm.totalRuns, 2);
  assert.equal(firm.unpricedRuns, 0);
  assert.equal(firm.costIsLowerBound, false);
});

test('usage and attribution report the tokens providers processed beside the tokens answered: a cache hit adds customer tokens only, as its economics says', async (t) => {
  const { chat, get } = await setup(t);
  const live = await chat('billed once');
  const hit = await chat('billed once');
  assert.equal(live.headers['x-svc-route'], 'live');
  assert.equal(hit.headers['x-svc-route'], 'exact_cache');
  const economics = {
    live: (await get(`/api/v1/runs/${live.headers['x-svc-run-id']}/economics`)).body.tokens,
    hit: (await get(`/api/v1/runs/${hit.headers['x-svc-run-id']}/economics`)).body.tokens,
  };
  assert.deepEqual(economics.live.actual, { promptTokens: 1000, completionTokens: 500, totalTokens: 1500 });
  assert.deepEqual(economics.hit.actual, { promptTokens: 0, completionTokens: 0, totalTokens: 0 });
  assert.equal(economics.hit.customer.totalTokens, 1500, 'the hit reports the usage of the answer it replays');

  const tokensOf = (entry: any) => ({
    customer: [entry.promptTokens, entry.completionTokens, entry.totalTokens],
    actual: [entry.actualPromptTokens, entry.actualCompletionTokens, entry.actualTotalTokens],
  });
  const both = { customer: [2000, 1000, 3000], actual: [1000, 500, 1500] };
  const usage = (await get('/api/v1/usage')).body;
  assert.deepEqual(tokensOf(usage.usage), both, 'the month: answered twice, billed once');
  assert.deepEqual(tokensOf(usage.trend.at(-1)), both, "today's trend entry");
  const attribution = (await get('/api/v1/usage/attribution')).body;
  assert.deepEqual(tokensOf(attribution.totals), both);
  assert.deepEqual(
    attribution.byRoute.map((entry: any) => [entry.value, tokensOf(entry)]),
    [
      ['live', { customer: [1000, 500, 1500], actual: [1000, 500, 1500] }],
      ['exact_cache', { customer: [1000, 500, 1500], actual: [0, 0, 0] }],
    ],
  );
  // Each run's economics adds up to the rollups: actual and customer tokens alike.
  const sum = (kind: 'actual' | 'customer') => economics.live[kind].totalTokens + economics.hit[kind].totalTokens;
  assert.equal(usage.usage.actualTotalTokens, sum('actual'));
  assert.equal(usage.usage.totalTokens, sum('customer'));
});

test('an SDK-ingested prompt, which svc did not serve, is counted in ingestedRuns: not as a live run, nor in the hit-rate denominators', async (t) => {
  const { app, chat, get } = await setup(t);
  assert.equal((await chat('asked twice')).headers['x-svc-route'], 'live');
  assert.equal((await chat('asked twice')).headers['x-svc-route'], 'exact_cache');
  for (const prompt of ['handled elsewhere', 'also handled elsewhere']) {
    const ingested = await app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: admin, payload: { source: 'langchain', prompt } });
    assert.equal(ingested.statusCode, 201);
  }

  const { body } = await get('/api/v1/savings');
  assert.equal(body.totalRuns, 4, 'every run recorded counts in totalRuns');
  assert.equal(body.liveRuns, 1, 'only the run svc answered live');
  assert.equal(body.ingestedRuns, 2);
  assert.equal(body.optimizedRuns, 1);
  assert.equal(body.cacheHitRate, 0.5, 'ingested runs do not dilute the hit rate');
  assert.equal(body.artifactHitRate, 0);

  // An app-pinned key sees its own app's ingested runs only.
  const pinned = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'pinned', appId: 'sdk-app' } })).token;
  await app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: bearer(pinned), payload: { source: 'langchain', prompt: 'mine' } });
  const scoped = (await get('/api/v1/savings', bearer(pinned))).body;
  assert.deepEqual([scoped.totalRuns, scoped.liveRuns, scoped.ingestedRuns, scoped.cacheHitRate], [1, 0, 1, 0]);
  assert.equal((await get('/api/v1/savings')).body.ingestedRuns, 3);
});

test('a window since the epoch day echoes that day, not null (which reads as no since)', async (t) => {
  const { get } = await setup(t);
  for (const since of ['1970-01-01', '1970-01-01T12:00:00Z', '0']) {
    const savings = await get(`/api/v1/savings?since=${since}&until=1970-01-02`);
    assert.equal(savings.status, 200, since);
    assert.equal(savings.body.window.since, '1970-01-01T00:00:00.000Z', `/savings?since=${since}`);
  }
  // Attribution's default since is the start of the until's month: January 1970 here.
  const attribution = await get('/api/v1/usage/attribution?until=1970-01-15');
  assert.equal(attribution.status, 200);
  assert.equal(attribution.body.window.since, '1970-01-01T00:00:00.000Z');
  // Without a since, /savings still says so.
  assert.equal((await get('/api/v1/savings')).body.window.since, null);
});

test('attribution by fallback holds every run that failed over, served by the next provider or failed there too; the reason tells them apart', async (t) => {
  const failing = (text: string) => text.includes('both fail');
  const primary = await startFakeUpstream(t, (_request, res) => sendJson(res, 429, { error: { message: 'slow down' } }));
  const fallback = await startFakeUpstream(t, (request, res) => {
    if (failing(JSON.stringify((request.body as any)?.messages ?? ''))) return sendJson(res, 500, { error: { message: 'fallback exploded' } });
    return sendJson(res, 200, { ...completion('from the fallback'), usage: { prompt_tokens: 200, completion_tokens: 100, total_tokens: 300 } });
  });
  const { app } = await build(t, {
    env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: primary.baseUrl, CHATCOMP_FALLBACK_API_KEY: 'sk-fallback-0000', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl },
  });
  const chat = (content: string) => app.inject({ method: 'POST', url: '/v1/chat/completions', headers: admin, payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content }] } });
  assert.equal((await chat('served by the fallback')).statusCode, 200);
  assert.equal((await chat('both fail')).statusCode, 502);

  const attribution = json(await app.inject({ url: '/api/v1/usage/attribution', headers: admin }));
  // The 429 cost nothing; the fallback's answer (200 x $0.15 + 100 x $0.6 per million) is the whole cost.
  assert.deepEqual(attribution.byFallback.map((entry: any) => [entry.value, entry.runs, entry.costUsd]), [['chatcomp->chatcomp-fallback', 2, 0.00009]]);
  assert.deepEqual(
    attribution.byReason.map((entry: any) => [entry.value, entry.runs]),
    [['live_fallback', 1], ['failed:upstream_error', 1]],
  );
});

test('a run counts on the UTC day it was created, also when it finished the next day: /savings and attribution windows, the usage trend and the runs list agree', async (t) => {
  const clock = new MovableClock(Date.UTC(2026, 10, 30, 23, 59, 59, 500));
  const upstream = await startFakeUpstream(t, (_request, res) => {
    clock.advance(1000); // answered after midnight
    sendJson(res, 200, { ...completion('late'), usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } });
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl }, overrides: { clock } });
  const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: admin, payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'at midnight' }] } });
  assert.equal(response.statusCode, 200);
  const get = async (url: string) => json(await app.inject({ url, headers: admin }));
  const { run } = await get(`/api/v1/runs/${response.headers['x-svc-run-id']}`);
  assert.deepEqual([run.createdAt, run.completedAt], ['2026-11-30T23:59:59.500Z', '2026-12-01T00:00:00.500Z']);

  const cost = (1000 * 0.15 + 500 * 0.6) / 1_000_000;
  for (const query of ['since=2026-11-30&until=2026-11-30', 'until=2026-11-30T23:59:59.999Z']) {
    assert.deepEqual([(await get(`/api/v1/savings?${query}`)).totalCostUsd, (await get(`/api/v1/usage/attribution?${query}`)).totals.runs], [cost, 1], query);
  }
  assert.deepEqual([(await get('/api/v1/savings?since=2026-12-01')).totalRuns, (await get('/api/v1/usage/attribution?since=2026-12-01')).totals.runs], [0, 0]);
  const usage = await get('/api/v1/usage');
  assert.deepEqual([usage.period.start, usage.usage.runs, usage.trend.map((day: any) => [day.date, day.runs])], ['2026-12-01T00:00:00.000Z', 0, [['2026-12-01', 0]]]);
  assert.equal((await get('/api/v1/runs?since=2026-12-01T00:00:00Z')).pagination.total, 0);
  assert.equal((await get('/api/v1/runs?since=2026-11-30T23:59:59.500Z')).pagination.total, 1);
});

test('an embeddings call records no run: its tokens and cost, which the provider bills, are in none of /savings, /usage and attribution', async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    const input = (request.body as any).input as string[];
    sendJson(res, 200, { ...embeddingsAnswer(input, 'text-embedding-3-small'), usage: { prompt_tokens: 1_000_000, total_tokens: 1_000_000 } });
  });
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const response = await app.inject({ method: 'POST', url: '/v1/embeddings', headers: admin, payload: { model: 'text-embedding-3-small', input: ['a', 'b'] } });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(json(response).usage.prompt_tokens, 1_000_000, 'a million tokens at $0.02 per million: $0.02 on the bill');
  assert.equal(response.headers['x-svc-run-id'], undefined);
  const get = async (url: string) => json(await app.inject({ url, headers: admin }));
  const [savings, usage, attribution] = [await get('/api/v1/savings'), await get('/api/v1/usage'), await get('/api/v1/usage/attribution')];
  assert.deepEqual([savings.totalRuns, savings.totalCostUsd], [0, 0]);
  assert.deepEqual([usage.usage.runs, usage.usage.costUsd, usage.usage.actualTotalTokens], [0, 0, 0]);
  assert.deepEqual([attribution.totals.runs, attribution.totals.costUsd], [0, 0]);
});
