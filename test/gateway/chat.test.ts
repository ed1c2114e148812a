/** POST /v1/chat/completions through app.inject(): shapes, headers, the exact cache and its controls, failures. */
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { bearer, build, json } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { tempDir } from '../support/process.ts';
import { countTokens } from '../../src/gateway/tokens.ts';

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  },
};

let counter = 0;
/** A request nobody sent before in this process, so cache state never leaks between tests. */
function fresh(extra: Record<string, unknown> = {}) {
  counter += 1;
  return { model: 'gpt-4o-mini', messages: [{ role: 'user', content: `question ${counter} at ${process.hrtime.bigint()}` }], ...extra };
}

async function chat(app: any, payload: unknown, headers: Record<string, string> = {}) {
  return app.inject({ method: 'POST', url: '/v1/chat/completions', payload, headers });
}

function sseEvents(body: string): string[] {
  return body
    .split('\n\n')
    .map((block) => block.trim())
    .filter(Boolean)
    .map((block) => {
      assert.ok(block.startsWith('data: '), `SSE block must be a data line: ${block}`);
      return block.slice('data: '.length);
    });
}

test('a buffered chat completion has the wire shape and the evidence headers', async (t) => {
  const { app } = await build(t);
  const response = await chat(app, fresh(), { 'x-request-id': 'client-req-42' });
  assert.equal(response.statusCode, 200);
  const body = json(response);
  assert.equal(body.object, 'chat.completion');
  assert.match(body.id, /^chatcmpl-/);
  assert.equal(body.choices[0].message.role, 'assistant');
  assert.equal(typeof body.choices[0].message.content, 'string');
  assert.equal(body.choices[0].finish_reason, 'stop');
  assert.ok(body.usage.prompt_tokens > 0);
  assert.match(response.headers['x-svc-run-id'], /^run_/);
  assert.equal(response.headers['x-svc-route'], 'live');
  assert.equal(response.headers['x-request-id'], 'client-req-42');
  assert.match(response.headers['x-svc-run-url'], new RegExp(`/runs/${response.headers['x-svc-run-id']}$`));
  assert.match(String(response.headers['access-control-expose-headers']), /x-svc-run-id/);

  const malformedId = await chat(app, fresh(), { 'x-request-id': 'has spaces and ✓' });
  assert.match(malformedId.headers['x-request-id'], /^req_[0-9a-f]+$/);
});

test("x-svc-run-url is the request's origin when its Host is a host and port, never a path, query or user info a client slipped into Host", async (t) => {
  // With a credential: open dev mode answers no DNS name of the web (DNS rebinding, test/api/auth.test.ts).
  const token = 'bootstrap-token-run-url-tests-0001';
  const { app } = await build(t, { env: { SVC_API_KEY: token } });
  const urlWith = async (host: string) => String((await chat(app, fresh(), { host, ...bearer(token) })).headers['x-svc-run-url']);
  assert.match(await urlWith('svc.example:8787'), /^http:\/\/svc\.example:8787\/runs\/run_/);
  assert.match(await urlWith('[::1]:8787'), /^http:\/\/\[::1\]:8787\/runs\/run_/);
  for (const hostile of ['evil.example/phish?x=', 'user@evil.example', 'evil.example#', 'a b']) {
    const url = await urlWith(hostile);
    assert.doesNotMatch(url, /evil|phish|@|#| /, `${hostile} -> ${url}`);
    assert.match(url, /^http:\/\/[^/]+\/runs\/run_[A-Za-z0-9]+$/);
  }
});

test("x-svc-run-url takes X-Forwarded-Proto and -Host only from a trusted proxy, and an http(s) scheme only", async (t) => {
  const token = 'bootstrap-token-run-url-tests-0002';
  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' };
  const urlWith = async (app: any, headers: Record<string, string>, remoteAddress = '127.0.0.1') => {
    const request = { method: 'POST', url: '/v1/chat/completions', payload: fresh(), remoteAddress };
    return String((await app.inject({ ...request, headers: { host: 'svc.example:8787', ...bearer(token), ...headers } })).headers['x-svc-run-url']);
  };

  // No proxy trusted (the default): a client's forwarded headers are no part of the address.
  const { app: untrusting } = await build(t, { env: { SVC_API_KEY: token } });
  assert.match(await urlWith(untrusting, forwarded), /^http:\/\/svc\.example:8787\/runs\/run_/);
  assert.match(await urlWith(untrusting, { 'x-forwarded-proto': 'javascript' }), /^http:\/\/svc\.example:8787\/runs\/run_/);

  // A proxy trusted: its headers count, from its address only.
  const { app: trusting } = await build(t, { env: { SVC_API_KEY: token, SVC_TRUST_PROXY_HEADERS: 'true', SVC_TRUSTED_PROXY_CIDRS: '127.0.0.1/32' } });
  assert.match(await urlWith(trusting, { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'svc.example' }), /^https:\/\/svc\.example\/runs\/run_/);
  assert.match(await urlWith(trusting, forwarded, '198.51.100.7'), /^http:\/\/svc\.example:8787\/runs\/run_/);
  // What it forwarded of a client's (a proxy that appends, or passes the header on): never a scheme but http(s).
  for (const scheme of ['javascript', 'data', 'https:evil', 'ftp', '']) {
    const url = await urlWith(trusting, { 'x-forwarded-proto': scheme });
    assert.match(url, /^http:\/\/svc\.example:8787\/runs\/run_[A-Za-z0-9]+$/, `${scheme} -> ${url}`);
  }
  assert.match(await urlWith(trusting, { 'x-forwarded-proto': 'HTTPS' }), /^https:\/\/svc\.example:8787\/runs\/run_/);
});

test('the run is readable at once through x-svc-run-id, with a verified hash chain', async (t) => {
  const { app } = await build(t);
  const response = await chat(app, fresh());
  const runId = response.headers['x-svc-run-id'];
  const detail = await app.inject({ url: `/api/v1/runs/${runId}` });
  assert.equal(detail.statusCode, 200);
  const { run, events, window, attempts } = json(detail);
  assert.equal(run.status, 'completed');
  assert.equal(run.route, 'live');
  assert.equal(run.provider, 'mock');
  assert.equal(run.routeExplanation.route, 'live');
  assert.equal(run.routeExplanation.policyVerdict.decision, 'allow');
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0].outcome, 'success');
  assert.deepEqual(
    events.map((event: any) => event.seq),
    events.map((_: unknown, index: number) => index + 1),
  );
  assert.equal(events[0].type, 'run.started');
  assert.equal(events.at(-1).type, 'run.completed');
  assert.equal(window.hasMore, false);
  const integrity = json(await app.inject({ url: `/api/v1/runs/${runId}/integrity` }));
  assert.equal(integrity.ok, true);
  assert.equal(integrity.eventCount, events.length);
  const route = json(await app.inject({ url: `/api/v1/runs/${runId}/route` }));
  assert.equal(route.route, 'live');
  assert.equal(route.routeExplanation.cache[0].cacheType, 'exact_response');
});

test('tampering with a stored trace event is reported by /integrity at the broken link', async (t) => {
  const { app, services } = await build(t);
  const runId = (await chat(app, fresh())).headers['x-svc-run-id'];
  await services.store.flush();
  await services.store.write((sql) =>
    sql.run(`UPDATE run_events SET payload_json = '{"decision":"block"}' WHERE run_id = ? AND seq = 2`, [runId]),
  );
  const integrity = json(await app.inject({ url: `/api/v1/runs/${runId}/integrity` }));
  assert.equal(integrity.ok, false);
  assert.equal(integrity.brokenAt, 2);
  assert.match(integrity.reason, /hash/);

  const second = (await chat(app, fresh())).headers['x-svc-run-id'];
  await services.store.flush();
  await services.store.write((sql) => sql.run('DELETE FROM run_events WHERE run_id = ? AND seq = (SELECT MAX(seq) FROM run_events WHERE run_id = ?)', [second, second]));
  const truncated = json(await app.inject({ url: `/api/v1/runs/${second}/integrity` }));
  assert.equal(truncated.ok, false);
});

test('a cached answer is served again after a restart, once the key index is loaded from the data file', async (t) => {
  const dataDir = tempDir(t);
  const body = fresh();
  const before = await build(t, { dataDir });
  const first = await chat(before.app, body);
  assert.equal(first.headers['x-svc-route'], 'live');
  await before.app.close();
  await before.services.store.close(); // as svc stops: the deferred cache write is committed

  const after = await build(t, { dataDir });
  await after.services.cache.loaded();
  const again = await chat(after.app, body);
  assert.equal(again.headers['x-svc-route'], 'exact_cache');
  assert.equal(json(again).choices[0].message.content, json(first).choices[0].message.content);
  const stats = json(await after.app.inject({ url: '/api/v1/cache/stats' })).stats;
  assert.deepEqual(stats.find((row: { cacheType: string }) => row.cacheType === 'exact_response'), { cacheType: 'exact_response', entries: 1, hits: 1 });
});

test("the mock's answers are never served for a live provider's: configured after them, the provider answers the same request", async (t) => {
  const dataDir = tempDir(t);
  const body = fresh();
  const unconfigured = await build(t, { dataDir });
  const mocked = await chat(unconfigured.app, body);
  assert.match(json(mocked).choices[0].message.content, /^Mock answer/);
  await unconfigured.app.close();
  await unconfigured.services.store.close(); // as svc stops: the deferred cache write is committed

  const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, completion('The live answer.')));
  const configured = await build(t, { dataDir, env: { CHATCOMP_API_KEY: 'sk-upstream-secret', CHATCOMP_BASE_URL: upstream.baseUrl } });
  await configured.services.cache.loaded();
  const live = await chat(configured.app, body);
  assert.equal(live.headers['x-svc-route'], 'live');
  assert.equal(json(live).choices[0].message.content, 'The live answer.');
  assert.equal(upstream.requests.length, 1);
  // The live answer is cached as any other.
  assert.equal((await chat(configured.app, body)).headers['x-svc-route'], 'exact_cache');
  assert.equal(upstream.requests.length, 1);
});

test('an identical request is served from the exact cache, streamed or not', async (t) => {
  const { app } = await build(t);
  const body = fresh();
  const first = await chat(app, body);
  const second = await chat(app, body);
  assert.equal(second.headers['x-svc-route'], 'exact_cache');
  assert.equal(json(second).choices[0].message.content, json(first).choices[0].message.content);
  assert.notEqual(json(second).id, json(first).id);

  const streamed = await chat(app, { ...body, stream: true });
  assert.equal(streamed.headers['x-svc-route'], 'exact_cache');
  assert.match(String(streamed.headers['content-type']), /text\/event-stream/);
  const events = sseEvents(streamed.body);
  assert.equal(events.at(-1), '[DONE]');
  const text = events
    .slice(0, -1)
    .map((data) => JSON.parse(data).choices[0]?.delta?.content ?? '')
    .join('');
  assert.equal(text, json(first).choices[0].message.content);

  const run = json(await app.inject({ url: `/api/v1/runs/${second.headers['x-svc-run-id']}` })).run;
  assert.equal(run.route, 'exact_cache');
  assert.equal(run.routeExplanation.cache[0].lookup, 'hit');
  assert.equal(run.routeExplanation.cache[0].sourceRunId, first.headers['x-svc-run-id']);
  const stats = json(await app.inject({ url: '/api/v1/cache/stats' })).stats;
  assert.ok(stats.find((row: any) => row.cacheType === 'exact_response').hits >= 2);
});

test('the cache key covers every output-affecting field and the identity scope, but not transport fields', async (t) => {
  const { app } = await build(t);
  const base = fresh({ tools: [WEATHER_TOOL] });
  assert.equal((await chat(app, base)).headers['x-svc-route'], 'live');
  const variants: Array<[string, Record<string, unknown>, Record<string, string>]> = [
    ['temperature', { ...base, temperature: 0.3 }, {}],
    ['seed', { ...base, seed: 7 }, {}],
    ['parallel_tool_calls false', { ...base, parallel_tool_calls: false }, {}],
    ['tool_choice', { ...base, tool_choice: 'required' }, {}],
    ['response_format', { ...base, response_format: { type: 'json_object' } }, {}],
    ['reasoning_effort', { ...base, reasoning_effort: 'low' }, {}],
    ['verbosity', { ...base, verbosity: 'high' }, {}],
    ['stop', { ...base, stop: ['END'] }, {}],
    ['logit_bias', { ...base, logit_bias: { '50256': -100 } }, {}],
    ['model', { ...base, model: 'gpt-4o' }, {}],
    ['tools', { ...base, tools: [{ ...WEATHER_TOOL, function: { ...WEATHER_TOOL.function, description: 'other' } }] }, {}],
    ['subject header', base, { 'x-svc-subject': 'user-a' }],
    ['app header', base, { 'x-svc-app': 'billing' }],
  ];
  for (const [name, body, headers] of variants) {
    assert.equal((await chat(app, body, headers)).headers['x-svc-route'], 'live', `${name} must change the cache key`);
  }
  for (const [name, body] of [
    ['user', { ...base, user: 'someone' }],
    ['metadata', { ...base, metadata: { trace: 'x' } }],
    ['parallel_tool_calls true (the default)', { ...base, parallel_tool_calls: true }],
    ['store', { ...base, store: false }],
  ] as const) {
    assert.equal((await chat(app, body)).headers['x-svc-route'], 'exact_cache', `${name} must not change the cache key`);
  }
});

test('cache request controls: bypass and no-cache refresh, max-age=0 refreshes, no-store neither serves nor stores', async (t) => {
  const { app } = await build(t);
  const primed = fresh();
  await chat(app, primed);
  const refreshing: Array<Record<string, string>> = [{ 'x-svc-cache-bypass': 'true' }, { 'cache-control': 'no-cache' }, { 'cache-control': 'max-age=0' }];
  for (const headers of refreshing) {
    const response = await chat(app, primed, headers);
    assert.equal(response.headers['x-svc-route'], 'live', JSON.stringify(headers));
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}` }));
    const decision = run.run.routeExplanation.cache[0];
    assert.equal(decision.lookup, 'bypassed');
    assert.equal(decision.write, 'refreshed');
    assert.ok(run.events.some((event: any) => event.type === 'cache.skipped'));
    assert.ok(run.run.routeExplanation.rejectedAlternatives.some((alt: any) => alt.route === 'exact_cache'));
  }
  assert.equal((await chat(app, primed)).headers['x-svc-route'], 'exact_cache');

  const unseen = fresh();
  const noStore = await chat(app, unseen, { 'cache-control': 'no-store, no-cache', 'x-svc-cache-bypass': 'true' });
  assert.equal(noStore.headers['x-svc-route'], 'live');
  const run = json(await app.inject({ url: `/api/v1/runs/${noStore.headers['x-svc-run-id']}` }));
  assert.equal(run.run.routeExplanation.cache[0].lookup, 'skipped_no_store');
  assert.equal(run.run.routeExplanation.cache[0].write, 'suppressed_no_store');
  assert.ok(run.events.some((event: any) => event.type === 'cache.write_suppressed'));
  assert.equal((await chat(app, unseen)).headers['x-svc-route'], 'live', 'no-store must not have populated the cache');
  assert.equal((await chat(app, primed, { 'cache-control': 'no-store' })).headers['x-svc-route'], 'live', 'no-store skips serving');
});

test('observe-mode keys never get a cached answer; the would-have-served decision is recorded', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-secret-token-1234567890' } });
  const admin = bearer('bootstrap-secret-token-1234567890');
  const observe = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'shadow', mode: 'observe' } })).token;
  const body = fresh();
  await chat(app, body, admin);
  assert.equal((await chat(app, body, admin)).headers['x-svc-route'], 'exact_cache');
  const observed = await chat(app, body, bearer(observe));
  assert.equal(observed.statusCode, 200);
  assert.equal(observed.headers['x-svc-route'], 'live');
  const run = json(await app.inject({ url: `/api/v1/runs/${observed.headers['x-svc-run-id']}`, headers: admin })).run;
  assert.equal(run.mode, 'observe');
  assert.equal(run.routeExplanation.cache[0].lookup, 'observe_only');
});

test('streaming: native SSE, tool calls assembled whole and schema-valid, usage only when asked, [DONE] last', async (t) => {
  const { app } = await build(t);
  const withUsage = await chat(app, fresh({ stream: true, stream_options: { include_usage: true }, tools: [WEATHER_TOOL] }));
  assert.equal(withUsage.statusCode, 200);
  const events = sseEvents(withUsage.body);
  assert.equal(events.at(-1), '[DONE]');
  const chunks = events.slice(0, -1).map((data) => JSON.parse(data));
  for (const chunk of chunks) assert.equal(chunk.object, 'chat.completion.chunk');
  const calls = chunks.flatMap((chunk) => chunk.choices.flatMap((choice: any) => choice.delta.tool_calls ?? []));
  assert.ok(calls.length >= 1);
  for (const call of calls) {
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
  }
  assert.equal(chunks.find((chunk) => chunk.choices[0]?.finish_reason)?.choices[0].finish_reason, 'tool_calls');
  assert.ok(chunks.at(-1).usage.total_tokens > 0);

  const withoutUsage = sseEvents((await chat(app, fresh({ stream: true }))).body);
  assert.equal(withoutUsage.at(-1), '[DONE]');
  for (const data of withoutUsage.slice(0, -1)) assert.equal(JSON.parse(data).usage, undefined);
});

test('a stream the client asked without usage is stored with its usage: a cache hit asking for usage gets it, buffered or streamed, and records it', async (t) => {
  const { app } = await build(t);
  const request = fresh();
  const live = await chat(app, { ...request, stream: true });
  for (const data of sseEvents(live.body).slice(0, -1)) assert.equal(JSON.parse(data).usage, undefined, 'not asked for, not shown');
  const liveRun = json(await app.inject({ url: `/api/v1/runs/${live.headers['x-svc-run-id']}` })).run;
  assert.ok(liveRun.usage.totalTokens > 0);

  const buffered = await chat(app, request);
  assert.equal(buffered.headers['x-svc-route'], 'exact_cache');
  assert.equal(json(buffered).usage?.total_tokens, liveRun.usage.totalTokens);
  const streamed = await chat(app, { ...request, stream: true, stream_options: { include_usage: true } });
  assert.equal(streamed.headers['x-svc-route'], 'exact_cache');
  const events = sseEvents(streamed.body);
  assert.equal(JSON.parse(events.at(-2)!).usage?.total_tokens, liveRun.usage.totalTokens);
  for (const response of [buffered, streamed]) {
    const hit = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}` })).run;
    assert.equal(hit.usage.totalTokens, liveRun.usage.totalTokens);
  }
});

test('validation errors are chat-completions-shaped 400s and create no run', async (t) => {
  const { app } = await build(t);
  const cases: Array<[string, unknown]> = [
    ['missing model', { messages: [{ role: 'user', content: 'x' }] }],
    ['empty messages', { model: 'gpt-4o', messages: [] }],
    ['bad role', { model: 'gpt-4o', messages: [{ role: 'wizard', content: 'x' }] }],
    ['temperature type', fresh({ temperature: 'hot' })],
    ['temperature range', fresh({ temperature: 3 })],
    ['tool without tool_call_id', { model: 'gpt-4o', messages: [{ role: 'tool', content: 'x' }] }],
    ['malformed tool schema', fresh({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'objectx' } } }] })],
    ['tool_choice naming an undeclared tool', fresh({ tools: [WEATHER_TOOL], tool_choice: { type: 'function', function: { name: 'nope' } } })],
    ['two tools of one name', fresh({ tools: [WEATHER_TOOL, { type: 'function', function: { name: WEATHER_TOOL.function.name, parameters: { type: 'object' } } }] })],
    ['metadata value type', fresh({ metadata: { a: 1 } })],
    ['body is an array', [1, 2]],
  ];
  for (const [name, payload] of cases) {
    const response = await chat(app, payload);
    assert.equal(response.statusCode, 400, name);
    const body = json(response);
    assert.equal(typeof body.error.message, 'string', name);
    assert.equal(body.error.type, 'invalid_request_error', name);
    assert.ok('param' in body.error && 'code' in body.error, name);
    assert.equal(response.headers['x-svc-run-id'], undefined, name);
  }
  const malformed = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: '{"model":', headers: { 'content-type': 'application/json' } });
  assert.equal(malformed.statusCode, 400);
  assert.equal(json(malformed).error.type, 'invalid_request_error');
  const runs = json(await app.inject({ url: '/api/v1/runs' }));
  assert.equal(runs.pagination.total, 0);
});

test('stop: [] and top_logprobs without logprobs: true (the OpenAPI document refuses both) are 400s naming the field', async (t) => {
  const { app } = await build(t);
  const cases: Array<[string, unknown, string]> = [
    ['stop: [] (minItems 1)', fresh({ stop: [] }), 'stop'],
    ['top_logprobs without logprobs', fresh({ top_logprobs: 2 }), 'top_logprobs'],
    ['top_logprobs with logprobs: false', fresh({ top_logprobs: 0, logprobs: false }), 'top_logprobs'],
  ];
  for (const [name, payload, param] of cases) {
    const response = await chat(app, payload);
    assert.equal(response.statusCode, 400, name);
    const body = json(response);
    assert.equal(body.error.type, 'invalid_request_error', name);
    assert.match(body.error.message, new RegExp(`^${param}`), name);
    assert.equal(response.headers['x-svc-run-id'], undefined, name);
  }
  // The official clients send null for what is unset; with logprobs, top_logprobs is taken.
  assert.equal((await chat(app, fresh({ top_logprobs: null, logprobs: null, stop: null }))).statusCode, 200);
  // Validation takes it: the refusal is the mock's (it has no log probabilities), after a run was started.
  const withLogprobs = await chat(app, fresh({ top_logprobs: 2, logprobs: true }));
  assert.match(json(withLogprobs).error.message, /the mock provider has no log probabilities/);
  assert.ok(withLogprobs.headers['x-svc-run-id']);
  assert.equal((await chat(app, fresh({ stop: ['END'] }))).statusCode, 200);
});

test('a validation 400 names its field in param, as the upstream would (messages[0].role, temperature, stop); a field svc does not know of stays null', async (t) => {
  const { app } = await build(t);
  const cases: Array<[unknown, string | null]> = [
    [fresh({ temperature: 3 }), 'temperature'],
    [fresh({ stop: [] }), 'stop'],
    [fresh({ messages: [{ role: 'user', content: 'Hi' }, { role: 'wizard', content: 'Hi' }] }), 'messages[1].role'],
    // The OpenAPI document: every role's array of content parts has minItems 1.
    [fresh({ messages: [{ role: 'user', content: [] }] }), 'messages[0].content'],
    [fresh({ messages: [{ role: 'system', content: [] }, { role: 'user', content: 'Hi' }] }), 'messages[0].content'],
    [fresh({ messages: [{ role: 'user', content: 'Hi' }, { role: 'assistant', content: [] }, { role: 'user', content: 'Hi' }] }), 'messages[1].content'],
    [fresh({ model: 'x'.repeat(300) }), 'model'],
  ];
  for (const [payload, param] of cases) {
    const response = await chat(app, payload);
    assert.equal(response.statusCode, 400, String(param));
    assert.equal(json(response).error.param, param, json(response).error.message);
  }
});

test('provider failures: 429 keeps retry-after, 5xx is a 502, each recorded as a failed run with its attempt', async (t) => {
  const { app } = await build(t);
  const limited = await chat(app, fresh({ model: 'gpt-4o-mock-429' }));
  assert.equal(limited.statusCode, 429);
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  assert.equal(json(limited).error.type, 'rate_limit_error');
  const failed = await chat(app, fresh({ model: 'gpt-4o-mock-5xx' }));
  assert.equal(failed.statusCode, 502);
  assert.equal(json(failed).error.type, 'server_error');
  const runId = failed.headers['x-svc-run-id'];
  assert.match(runId, /^run_/);
  const detail = json(await app.inject({ url: `/api/v1/runs/${runId}` }));
  assert.equal(detail.run.status, 'failed');
  assert.equal(detail.run.error.kind, 'upstream_error');
  assert.equal(detail.attempts[0].outcome, 'failed');
  assert.equal(detail.attempts[0].errorKind, 'upstream_error');
  const failedRuns = json(await app.inject({ url: '/api/v1/runs?status=failed' }));
  assert.equal(failedRuns.pagination.total, 2);
  assert.equal(failedRuns.facets.status.failed, 2);
});

test('a stream that breaks after it started ends with an error event, never [DONE], and the run is failed', async (t) => {
  const { app } = await build(t);
  for (const model of ['gpt-4o-mock-truncated', 'gpt-4o-mock-malformed']) {
    const response = await chat(app, fresh({ model, stream: true }));
    assert.equal(response.statusCode, 200, model);
    const events = sseEvents(response.body);
    assert.notEqual(events.at(-1), '[DONE]', model);
    const last = JSON.parse(events.at(-1)!);
    assert.equal(last.error.type, 'server_error', model);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}` })).run;
    assert.equal(run.status, 'failed', model);
    assert.equal(run.error.kind, 'bad_response', model);
  }
});

test('runs list: filters, facets, pagination; events window paging; unknown and other-app runs are 404', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-secret-token-1234567890' } });
  const admin = bearer('bootstrap-secret-token-1234567890');
  const keyOf = async (appId: string) =>
    json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: appId, appId } })).token;
  const alpha = bearer(await keyOf('alpha'));
  const beta = bearer(await keyOf('beta'));
  const alphaRun = (await chat(app, fresh(), alpha)).headers['x-svc-run-id'];
  const betaRun = (await chat(app, fresh(), beta)).headers['x-svc-run-id'];
  await chat(app, fresh({ model: 'gpt-4o-mock-5xx' }), admin);

  const all = json(await app.inject({ url: '/api/v1/runs?limit=2', headers: admin }));
  assert.equal(all.runs.length, 2);
  assert.deepEqual(all.pagination, { limit: 2, offset: 0, total: 3, hasMore: true, nextBefore: all.runs[1].id });
  assert.deepEqual(all.facets.status, { completed: 2, failed: 1 });
  const alphaView = json(await app.inject({ url: '/api/v1/runs', headers: alpha }));
  assert.deepEqual(
    alphaView.runs.map((run: any) => run.id),
    [alphaRun],
  );
  assert.equal((await app.inject({ url: `/api/v1/runs/${betaRun}`, headers: alpha })).statusCode, 404);
  assert.equal((await app.inject({ url: `/api/v1/runs/${betaRun}/events`, headers: alpha })).statusCode, 404);
  assert.equal((await app.inject({ url: '/api/v1/runs/run_doesnotexist', headers: admin })).statusCode, 404);
  assert.equal(json(await app.inject({ url: '/api/v1/runs?model=gpt-4o-mock-5xx', headers: admin })).pagination.total, 1);
  assert.equal((await app.inject({ url: '/api/v1/runs?status=bogus', headers: admin })).statusCode, 400);
  assert.equal((await app.inject({ url: '/api/v1/runs?since=yesterday', headers: admin })).statusCode, 400);
  assert.equal(json(await app.inject({ url: `/api/v1/runs?since=${new Date(Date.now() + 60_000).toISOString()}`, headers: admin })).pagination.total, 0);
  // Totals and facets counted over the runs (a `since` that matches every run) agree with those from the rollups,
  // whatever route, status, model and provider filters come with them: each facet ignores its own filter.
  const since = new Date(0).toISOString();
  for (const filters of [
    '', 'status=failed', 'status=completed', 'route=live', 'route=live&status=failed', 'route=exact_cache',
    'model=gpt-4o-mini', 'model=gpt-4o-mock-5xx&status=failed', 'model=gpt-4o-mini&route=live&status=completed', 'provider=mock',
    'provider=mock&status=failed', 'model=gpt-4o-mini&provider=mock',
  ]) {
    const fromRollups = json(await app.inject({ url: `/api/v1/runs?${filters}`, headers: admin }));
    const counted = json(await app.inject({ url: `/api/v1/runs?since=${since}&${filters}`, headers: admin }));
    assert.equal(counted.pagination.total, fromRollups.pagination.total, filters);
    assert.deepEqual(counted.facets, fromRollups.facets, filters);
  }
  // A page past the matching runs, or of a model no run has, is empty; its total is still counted.
  const pastTheEnd = json(await app.inject({ url: '/api/v1/runs?model=gpt-4o-mini&offset=2', headers: admin }));
  assert.deepEqual([pastTheEnd.runs, pastTheEnd.pagination.total], [[], 2]);
  const lastPage = json(await app.inject({ url: '/api/v1/runs?model=gpt-4o-mini&offset=1', headers: admin }));
  assert.deepEqual([lastPage.runs.length, lastPage.pagination.total], [1, 2]);
  const noSuchModel = json(await app.inject({ url: '/api/v1/runs?model=no-such-model', headers: admin }));
  assert.deepEqual([noSuchModel.runs, noSuchModel.pagination.total, noSuchModel.facets], [[], 0, { route: {}, status: {} }]);
  const byModel = json(await app.inject({ url: '/api/v1/runs?model=gpt-4o-mini&status=failed', headers: admin }));
  assert.equal(byModel.pagination.total, 0);
  assert.deepEqual(byModel.facets, { route: {}, status: { completed: 2 } });

  const full = json(await app.inject({ url: `/api/v1/runs/${alphaRun}/events`, headers: admin }));
  const count = full.events.length;
  assert.ok(count >= 4);
  const page = json(await app.inject({ url: `/api/v1/runs/${alphaRun}/events?limit=2`, headers: admin }));
  assert.deepEqual(
    page.events.map((event: any) => event.seq),
    [count - 1, count],
  );
  assert.equal(page.window.hasMore, true);
  assert.equal(page.window.nextBefore, count - 1);
  const older = json(await app.inject({ url: `/api/v1/runs/${alphaRun}/events?limit=500&before=${page.window.nextBefore}`, headers: admin }));
  assert.deepEqual(
    older.events.map((event: any) => event.seq),
    Array.from({ length: count - 2 }, (_, index) => index + 1),
  );
  assert.equal(older.window.hasMore, false);
  assert.equal(older.window.nextBefore, null);
  assert.equal((await app.inject({ url: `/api/v1/runs/${alphaRun}/events?limit=501`, headers: admin })).statusCode, 400);
  assert.equal((await app.inject({ url: `/api/v1/runs/${alphaRun}/events?limit=0`, headers: admin })).statusCode, 400);
});

test('cache invalidate: admin only, SPEC 8 key-prefix rules, and invalidated answers are gone', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: 'bootstrap-secret-token-1234567890' } });
  const admin = bearer('bootstrap-secret-token-1234567890');
  const member = bearer(json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'member' } })).token);
  const body = fresh();
  await chat(app, body, admin);
  assert.equal((await chat(app, body, admin)).headers['x-svc-route'], 'exact_cache');
  const invalidate = (payload: Record<string, unknown>, headers = admin) => app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', payload, headers });

  assert.equal((await invalidate({ cacheType: 'exact_response' }, member)).statusCode, 403);
  for (const payload of [
    { keyPrefix: 'chat_completions:' },
    { cacheType: 'exact_response', keyPrefix: '' },
    { cacheType: 'exact_response', keyPrefix: ' chat' },
    { cacheType: 'exact_response', keyPrefix: 'x'.repeat(513) },
    { cacheType: 'no_such_tier' },
    { all: true, cacheType: 'exact_response' },
    { all: false },
    { cacheType: 'exact_response', extra: 1 },
  ]) {
    const response = await invalidate(payload);
    assert.equal(response.statusCode, 400, JSON.stringify(payload));
    assert.equal(json(response).error.code, 'invalid_request');
  }
  assert.equal((await chat(app, body, admin)).headers['x-svc-route'], 'exact_cache', 'rejected invalidations change nothing');

  const prefixed = json(await invalidate({ cacheType: 'exact_response', keyPrefix: 'messages:' }));
  assert.equal(prefixed.invalidated, 0);
  const done = json(await invalidate({ cacheType: 'exact_response', keyPrefix: 'chat_completions:' }));
  assert.ok(done.invalidated >= 1);
  assert.equal((await chat(app, body, admin)).headers['x-svc-route'], 'live');
  assert.ok(json(await invalidate({ all: true })).invalidated >= 1);
  const audit = json(await app.inject({ url: '/api/v1/audit', headers: admin }));
  assert.ok(audit.events.some((event: any) => event.action === 'cache.invalidate'));
});

test('an answer asked with logprobs is not stored in the exact cache (the cache cannot give them back): a repeat goes live', async (t) => {
  const { app } = await build(t);
  const body = { model: 'gpt-4o-mini', logprobs: true, messages: [{ role: 'user', content: 'with logprobs, please' }] };
  assert.equal((await chat(app, body)).headers['x-svc-route'], 'live');
  assert.equal((await chat(app, body)).headers['x-svc-route'], 'live');
  const plain = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'with logprobs, please' }] };
  assert.equal((await chat(app, plain)).headers['x-svc-route'], 'live');
  assert.equal((await chat(app, plain)).headers['x-svc-route'], 'exact_cache');
});

test('a stop sequence that ends the mock\'s text before its first character still counts as output: the sequence generated is billed, as the provider bills it, so an empty answer reports at least one completion token, buffered and streamed (the official client)', async (t) => {
  const { app } = await build(t);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });
  // Every text answer of the mock starts with "Mock answer".
  const ask = () => ({ model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: `hi #${++counter} ${process.hrtime.bigint()}` }], stop: 'Mock' });
  const buffered = await client.chat.completions.create(ask());
  assert.equal(buffered.choices[0]!.message.content, '');
  assert.equal(buffered.choices[0]!.finish_reason, 'stop');
  assert.ok(buffered.usage!.completion_tokens >= 1, `an empty answer reported ${buffered.usage!.completion_tokens} completion tokens`);
  assert.equal(buffered.usage!.total_tokens, buffered.usage!.prompt_tokens + buffered.usage!.completion_tokens);
  let usage: OpenAI.CompletionUsage | null | undefined;
  let text = '';
  for await (const chunk of await client.chat.completions.create({ ...ask(), stream: true, stream_options: { include_usage: true } })) {
    text += chunk.choices[0]?.delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, '');
  assert.ok(usage && usage.completion_tokens >= 1, `an empty streamed answer reported ${usage?.completion_tokens} completion tokens`);
  // A stop sequence later in the text: the text kept and the sequence, not the whole planned text.
  const whole = await client.chat.completions.create({ ...ask(), stop: null });
  const cut = await client.chat.completions.create({ ...ask(), stop: 'you said' });
  assert.ok(cut.usage!.completion_tokens < whole.usage!.completion_tokens);
  assert.ok(cut.usage!.completion_tokens > countTokens(cut.choices[0]!.message.content ?? ''));
});

test('the mock has no log probabilities, audio or web search to give: a request asking for them is a 400 naming the field, buffered and streamed, never a text answer with logprobs: null or no audio (the official client)', async (t) => {
  const { app } = await build(t);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });
  const messages = [{ role: 'user' as const, content: 'hi' }];
  const asks = [
    { field: 'logprobs', extra: { logprobs: true, top_logprobs: 2 } },
    { field: 'modalities', extra: { modalities: ['text', 'audio'] as Array<'text' | 'audio'>, audio: { voice: 'alloy' as const, format: 'wav' as const } } },
    { field: 'web_search_options', extra: { web_search_options: {} } },
  ];
  for (const { field, extra } of asks) {
    for (const stream of [false, true]) {
      const error = await client.chat.completions.create({ model: 'gpt-4o-mini', messages, ...extra, stream }).then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, `${field} (stream: ${stream}) was answered instead of refused`);
      assert.match(error.message, new RegExp(field), `${field} (stream: ${stream})`);
      assert.equal(error.param, field, `${field} (stream: ${stream}): param`);
    }
  }
  // Without them the same request is answered.
  const plain = await client.chat.completions.create({ model: 'gpt-4o-mini', messages });
  assert.equal(plain.choices.length, 1);
});
