/**
 * The chat-completions wire end to end: the official `openai` client against a listening svc whose live provider is
 * a fake upstream started by the test. Success, passthrough, streamed tool calls, 429, fail-open on 5xx, timeouts,
 * malformed and truncated answers, and a client abort mid-stream; payloads checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { bearer, build, json } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, sleep, startFakeUpstream, startSse, streamUntilClientCloses, untilClientCloses, type FakeUpstream } from '../support/fake-upstream.ts';
import { readFileSync } from 'node:fs';
import { expectFailureAnswered } from '../support/failover.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { OPENAPI_PATH, validateAgainst } from '../support/openapi.ts';
import { finishedRun, finishedRuns } from '../support/finished-runs.ts';

const WEATHER_TOOL = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { enum: ['c', 'f'] } }, required: ['city'] },
  },
};

async function gateway(t: TestContext, upstream: FakeUpstream, env: Record<string, string> = {}) {
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream-secret', CHATCOMP_BASE_URL: upstream.baseUrl, ...env } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });
  return { ...built, address, client };
}


/** The fields of the fake upstream's chunks, and a chunk of one choice's delta (and finish). */
const UPSTREAM_CHUNK = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini' };
const delta = (d: unknown, finish: string | null = null) => ({ ...UPSTREAM_CHUNK, choices: [{ index: 0, delta: d, finish_reason: finish }] });

/** The tool calls a client's stream emitted, as [index, id, name, parsed arguments]. */
function emittedCalls(chunks: OpenAI.Chat.Completions.ChatCompletionChunk[]): unknown[][] {
  const calls = chunks.flatMap((chunk) => chunk.choices.flatMap((choice) => choice.delta.tool_calls ?? []));
  return calls.map((call) => [call.index, call.id, call.function?.name, JSON.parse(call.function!.arguments!)]);
}

function toolChunks(): unknown[] {
  return [
    delta({ role: 'assistant', content: null }),
    delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
    delta({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] }),
    delta({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
    delta({ tool_calls: [{ index: 1, function: { arguments: '"Lima","unit":"c"}' } }] }),
    delta({}, 'tool_calls'),
    { ...UPSTREAM_CHUNK, choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 } },
  ];
}

test('buffered chat through the SDK: fields pass through, the answer validates, cost comes from the price table', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('Hello from upstream')));
  const { client, app } = await gateway(t, upstream);
  const { data, response } = await client.chat.completions
    .create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
      temperature: 0.2,
      seed: 11,
      parallel_tool_calls: false,
      tools: [WEATHER_TOOL],
      metadata: { team: 'infra' },
      reasoning_effort: 'low',
      stop: ['END'],
      logit_bias: { '42': 1 },
      user: 'u-1',
      prompt_cache_key: 'k1',
      service_tier: 'auto',
      store: false,
      response_format: { type: 'text' },
    })
    .withResponse();
  assert.equal(data.choices[0]!.message.content, 'Hello from upstream');
  assert.equal(validateAgainst('CreateChatCompletionResponse', data), null);
  const sent = upstream.requests[0]!;
  assert.equal(sent.url, '/v1/chat/completions');
  assert.equal(sent.headers.authorization, 'Bearer sk-upstream-secret');
  for (const field of ['temperature', 'seed', 'parallel_tool_calls', 'tools', 'metadata', 'reasoning_effort', 'stop', 'logit_bias', 'user', 'prompt_cache_key', 'service_tier', 'store', 'response_format']) {
    assert.ok(field in sent.body, `${field} must reach the upstream`);
  }
  assert.equal(sent.body.parallel_tool_calls, false);
  const runId = response.headers.get('x-svc-run-id')!;
  assert.equal(response.headers.get('x-svc-route'), 'live');
  const run = json(await app.inject({ url: `/api/v1/runs/${runId}` }));
  assert.equal(run.run.provider, 'chatcomp');
  assert.equal(run.run.priced, true);
  assert.ok(run.run.costUsd > 0);
  assert.deepEqual(run.run.usage, { promptTokens: 5, completionTokens: 2, totalTokens: 7 });
  assert.equal(run.attempts[0].costUsd, run.run.costUsd);
  assert.doesNotMatch(JSON.stringify(run), /sk-upstream-secret/);
});

/** The string values of an enum schema of the OpenAPI document (`ReasoningEffort`, `ServiceTier`). */
function documentEnum(name: string): string[] {
  const schema = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')).components.schemas[name] as { anyOf: Array<{ enum?: string[] }> };
  return schema.anyOf.flatMap((branch) => branch.enum ?? []);
}

test('every reasoning_effort and service_tier of the OpenAPI document reaches the upstream, none refused as unknown', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('fine')));
  const { client } = await gateway(t, upstream);
  const efforts = documentEnum('ReasoningEffort');
  const tiers = documentEnum('ServiceTier');
  // 'xhigh' (in the SDK's own type), 'max' and 'fast' were 400s.
  for (const value of ['xhigh', 'max']) assert.ok(efforts.includes(value));
  assert.ok(tiers.includes('fast'));
  // A message of its own per request: service_tier is not part of the cache key, so a repeat would be a hit.
  const ask = (fields: Record<string, string>) =>
    client.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: JSON.stringify(fields) }], ...fields } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  for (const reasoning_effort of efforts) {
    await ask({ reasoning_effort });
    assert.equal(upstream.requests.at(-1)!.body.reasoning_effort, reasoning_effort);
  }
  for (const service_tier of tiers) {
    await ask({ service_tier });
    assert.equal(upstream.requests.at(-1)!.body.service_tier, service_tier);
  }
  await assert.rejects(ask({ reasoning_effort: 'extreme' }), (error: unknown) => error instanceof OpenAI.BadRequestError);
});

test('tool_choice allowed_tools (of the OpenAPI document and the SDK) reaches the upstream; the mock calls only an allowed tool; one naming an undeclared tool is a 400', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('no tool needed')));
  const { client } = await gateway(t, upstream);
  const CLOCK_TOOL = { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } };
  const allowed = (name: string, mode: 'auto' | 'required') => ({ type: 'allowed_tools' as const, allowed_tools: { mode, tools: [{ type: 'function', function: { name } }] } });
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is the weather in Oslo?' }], tools: [WEATHER_TOOL, CLOCK_TOOL] };
  const { data } = await client.chat.completions.create({ ...request, tool_choice: allowed('get_time', 'auto') }).withResponse();
  assert.equal(data.choices[0]!.message.content, 'no tool needed');
  assert.deepEqual(upstream.requests[0]!.body.tool_choice, allowed('get_time', 'auto'));
  await assert.rejects(client.chat.completions.create({ ...request, tool_choice: allowed('get_stock', 'required') }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal(error.param, 'tool_choice');
    assert.match(error.message, /get_stock/);
    return true;
  });
  assert.equal(upstream.requests.length, 1);
  // The mock (no live key) honours it: `required` calls the allowed tool though the message names the other one.
  const { app } = await build(t);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const mock = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0 });
  const called = await mock.chat.completions.create({ ...request, tool_choice: allowed('get_time', 'required') });
  const calls = called.choices[0]!.message.tool_calls ?? [];
  assert.deepEqual(calls.map((call) => (call.type === 'function' ? call.function.name : call.type)), ['get_time']);
  assert.equal(validateAgainst('CreateChatCompletionResponse', called), null);
});

test('custom tools and a custom tool_choice (the OpenAPI document has them) are 400s that say so, and reach no upstream', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('unused')));
  const { client } = await gateway(t, upstream);
  const messages = [{ role: 'user' as const, content: 'Write a query' }];
  const custom = { type: 'custom' as const, custom: { name: 'sql', description: 'A SQL query', format: { type: 'text' as const } } };
  for (const params of [
    { model: 'gpt-5', messages, tools: [custom] },
    { model: 'gpt-5', messages, tools: [WEATHER_TOOL], tool_choice: { type: 'custom' as const, custom: { name: 'sql' } } },
  ]) {
    await assert.rejects(client.chat.completions.create(params), (error: unknown) => {
      assert.ok(error instanceof OpenAI.BadRequestError);
      // Was 'tool_choice: Invalid input', or a complaint that `function` is missing.
      assert.match(error.message, /only tools of type 'function'.*custom tools are taken on \/v1\/responses/);
      return true;
    });
  }
  assert.equal(upstream.requests.length, 0);
});

test('a buffered answer without a choice is relayed but not stored: the repeat goes live again', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, { ...completion(''), choices: [] }));
  const { client } = await gateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'an answer the upstream lost' }] };
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const { data, response } = await client.chat.completions.create(request).withResponse();
    assert.deepEqual(data.choices, []);
    assert.equal(response.headers.get('x-svc-route'), 'live');
  }
  assert.equal(upstream.requests.length, 2);
});

test('usage whose counts are not token counts is estimated, and the run completes, buffered and streamed', async (t) => {
  const usage = { prompt_tokens: null, completion_tokens: 2, total_tokens: 2 };
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (request.body.stream !== true) return sendJson(res, 200, { ...completion('Hi.'), usage });
    sendChunks(res, [contentChunk('Hi.'), { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }, { ...contentChunk(''), choices: [], usage }]);
  });
  const { client, app } = await gateway(t, upstream);
  const messages = [{ role: 'user' as const, content: 'hello' }];
  const buffered = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
  const streamed = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello again' }], stream: true }).withResponse();
  for await (const _chunk of streamed.data);
  for (const { response } of [buffered, streamed]) {
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'completed');
    assert.ok(run.usage.promptTokens > 0);
  }
});

test('a model without a list price is flagged, not guessed', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('ok', 'acme-private-7b')));
  const { client, app } = await gateway(t, upstream);
  const { response } = await client.chat.completions.create({ model: 'acme-private-7b', messages: [{ role: 'user', content: 'x' }] }).withResponse();
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.priced, false);
  assert.equal(run.costUsd, 0);

  // A failed run of the model, and a stream of it the client left with part of the answer, are flagged alike.
  upstream.handle(async (request, res) => {
    if (!request.body.stream) return sendJson(res, 500, { error: { message: 'upstream exploded' } });
    startSse(res);
    await streamUntilClientCloses(res, (i) => res.write(`data: ${JSON.stringify(contentChunk(`piece ${i} `))}\n\n`));
    res.end();
  });
  const failed = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'acme-private-7b', messages: [{ role: 'user', content: 'y' }] } });
  assert.equal(failed.statusCode, 502);
  const failedRun = json(await app.inject({ url: `/api/v1/runs/${failed.headers['x-svc-run-id']}` })).run;
  assert.equal(failedRun.status, 'failed');
  assert.equal(failedRun.priced, false);
  const controller = new AbortController();
  const stream = await client.chat.completions.create({ model: 'acme-private-7b', messages: [{ role: 'user', content: 'z' }], stream: true }, { signal: controller.signal });
  let received = 0;
  try {
    for await (const _chunk of stream) if (++received === 3) controller.abort();
  } catch {
    // the client's own abort
  }
  await upstream.clientClosed();
  const [aborted] = await finishedRuns(app);
  assert.equal(aborted.error.kind, 'aborted');
  assert.ok(aborted.usage.completionTokens > 0, 'part of the answer was produced');
  assert.equal(aborted.priced, false, 'its cost is unknown, not 0');
});

test('streamed tool calls: fragments assembled, each call emitted whole and valid, usage kept, chunks validate', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendChunks(res, toolChunks()));
  const { client, app } = await gateway(t, upstream);
  const stream = await client.chat.completions.create({
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'weather in Oslo and Lima' }],
    tools: [WEATHER_TOOL],
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
  assert.deepEqual(emittedCalls(chunks), [
    [0, 'call_a', 'get_weather', { city: 'Oslo' }],
    [1, 'call_b', 'get_weather', { city: 'Lima', unit: 'c' }],
  ]);
  assert.equal(chunks.at(-1)!.usage!.total_tokens, 50);
  assert.equal(upstream.requests[0]!.body.stream, true);

  // The SDK's own assembly helper sees the same two calls.
  const runner = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'again' }], tools: [WEATHER_TOOL] });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0]!.message.tool_calls!.length, 2);
  const runs = json(await app.inject({ url: '/api/v1/runs?status=completed' }));
  assert.equal(runs.pagination.total, 2);
  assert.equal(runs.runs[0].usage.totalTokens, 50);
});

test('streamed tool calls an upstream interleaves (index 0, 1, 0, 1, as vLLM may) are each assembled whole and emitted, not refused', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      delta({ role: 'assistant', content: null }),
      delta({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      delta({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '{"city":"Lima",' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '"unit":"c"}' } }] }),
      delta({}, 'tool_calls'),
      { ...UPSTREAM_CHUNK, choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 } },
    ]),
  );
  const { client, app } = await gateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'weather in Oslo and Lima' }], tools: [WEATHER_TOOL] };
  const chunks = [];
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) chunks.push(chunk);
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
  assert.deepEqual(emittedCalls(chunks), [
    [0, 'call_a', 'get_weather', { city: 'Oslo' }],
    [1, 'call_b', 'get_weather', { city: 'Lima', unit: 'c' }],
  ]);
  const runs = json(await app.inject({ url: '/api/v1/runs?status=completed' }));
  assert.equal(runs.pagination.total, 1);
  // The SDK's accumulator gets the same two calls from the exact cache's replay.
  const final = await client.chat.completions.stream(request).finalChatCompletion();
  assert.deepEqual(
    final.choices[0]!.message.tool_calls!.map((call) => [call.id, JSON.parse(call.function.arguments)]),
    [
      ['call_a', { city: 'Oslo' }],
      ['call_b', { city: 'Lima', unit: 'c' }],
    ],
  );
  assert.equal(upstream.requests.length, 1, 'the repeat was a cache hit');
});

test('a streamed choice the upstream sent without its index is relayed and kept at its position, as the OpenAPI document has a chunk (the SDK assembles it), live and replayed', async (t) => {
  const base = UPSTREAM_CHUNK;
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      { ...base, choices: [{ delta: { role: 'assistant', content: 'no ' }, finish_reason: null }] },
      { ...base, choices: [{ delta: { content: 'index' }, finish_reason: null }] },
      { ...base, choices: [{ delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
    ]),
  );
  const { client } = await gateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'a choice without its index' }] };
  for (const route of ['live', 'exact_cache']) {
    const chunks: unknown[] = [];
    const runner = client.chat.completions.stream(request).on('chunk', (chunk) => chunks.push(structuredClone(chunk)));
    const final = await runner.finalChatCompletion();
    for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, route);
    assert.deepEqual(
      final.choices.map((choice) => [choice.index, choice.message.content, choice.finish_reason]),
      [[0, 'no index', 'stop']],
      route,
    );
  }
  assert.equal(upstream.requests.length, 1, 'the repeat was a cache hit');
});

test('chunks an upstream streams without their object field go out as the document\'s chunks, with the usage chunk only for a client that asked', async (t) => {
  const base = { id: 'chatcmpl-up', created: 1700000000, model: 'gpt-4o-mini' };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'no object' }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...base, choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
    ]),
  );
  const { client } = await gateway(t, upstream);
  for (const includeUsage of [false, true]) {
    const chunks = [];
    const stream = await client.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: `without object, usage ${includeUsage}` }],
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    });
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, `usage ${includeUsage}`);
    if (includeUsage) {
      assert.equal(chunks.at(-1)!.usage!.total_tokens, 7);
      assert.ok(chunks.slice(0, -1).every((chunk) => chunk.usage === null));
    } else {
      assert.ok(chunks.every((chunk) => chunk.usage === undefined), 'the usage chunk is not shown to a client that did not ask');
    }
  }
});

test('a usage chunk without choices (Fireworks and some proxies send one) is the usage chunk: the stream completes with its usage, not a bad_response', async (t) => {
  const base = UPSTREAM_CHUNK;
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: 'usage apart' }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
      { ...base, usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
    ]),
  );
  const { client, app } = await gateway(t, upstream);
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'usage without choices' }], stream: true, stream_options: { include_usage: true } })
    .withResponse();
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
  assert.deepEqual(chunks.at(-1)!.choices, []);
  assert.equal(chunks.at(-1)!.usage!.total_tokens, 7);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'completed');
  assert.equal(run.usage.totalTokens, 7);
});

test('a usage chunk whose choices are empty objects or deltas (choices: [{}], [{ index: 0, delta: {} }], []) reaches a client that asked for usage, as the SDK reads it in its final completion', async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  let usageChoices: unknown[] = [];
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [delta({ role: 'assistant', content: 'usage beside choices' }), delta({}, 'stop'), { ...UPSTREAM_CHUNK, choices: usageChoices, usage }]),
  );
  const { client } = await gateway(t, upstream);
  for (const choices of [[{}], [{ index: 0, delta: {} }], [{ index: 0, delta: {}, finish_reason: null }], []]) {
    usageChoices = choices;
    const label = JSON.stringify(choices);
    const stream = client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `usage with choices ${label}` }], stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    stream.on('chunk', (chunk) => chunks.push(chunk));
    const final = await stream.finalChatCompletion();
    assert.deepEqual(final.usage, usage, label);
    assert.deepEqual(chunks.at(-1)!.usage, usage, label);
    for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, label);
    assert.equal(final.choices[0]!.message.content, 'usage beside choices', label);
    const notAsked = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `usage not asked, choices ${label}` }], stream: true });
    for await (const chunk of notAsked) assert.equal(chunk.usage, undefined, `${label}: the usage chunk is not shown to a client that did not ask`);
  }
});

test('streamed tool calls without an index (Gemini\'s compatible endpoint): a fragment with an id of its own starts the next call, one without continues the call before it', async (t) => {
  const base = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'gemini-2.5-flash' };
  const delta = (d: unknown, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      delta({ role: 'assistant', tool_calls: [{ id: 'function-call-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] }),
      delta({ tool_calls: [{ id: 'function-call-2', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] }),
      delta({ tool_calls: [{ function: { arguments: '"Lima"}' } }] }),
      delta({}, 'stop'),
      { ...base, choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 } },
    ]),
  );
  const { client } = await gateway(t, upstream);
  const chunks: unknown[] = [];
  const runner = client.chat.completions
    .stream({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'weather in Oslo and Lima' }], tools: [WEATHER_TOOL] })
    .on('chunk', (chunk) => chunks.push(structuredClone(chunk)));
  const final = await runner.finalChatCompletion();
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
  assert.deepEqual(
    final.choices[0]!.message.tool_calls!.map((call) => [call.id, JSON.parse(call.function.arguments)]),
    [
      ['function-call-1', { city: 'Oslo' }],
      ['function-call-2', { city: 'Lima' }],
    ],
  );
});

test('a streamed tool call keeps its fields beside id and function (Gemini\'s extra_content thought signature, which the next turn must send back), live and from the cache', async (t) => {
  const base = { id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'gemini-3-flash' };
  const delta = (d: unknown, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: finish }] });
  const signature = { google: { thought_signature: 'EjQKMgEAbc' } };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      delta({ role: 'assistant', tool_calls: [{ index: 0, id: 'function-call-1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' }, extra_content: signature }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }),
      delta({}, 'tool_calls'),
      { ...base, choices: [], usage: { prompt_tokens: 30, completion_tokens: 20, total_tokens: 50 } },
    ]),
  );
  const { client } = await gateway(t, upstream);
  const request = { model: 'gemini-3-flash', messages: [{ role: 'user' as const, content: 'weather in Oslo' }], tools: [WEATHER_TOOL] };
  for (const route of ['live', 'exact_cache']) {
    const final = await client.chat.completions.stream(request).finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls![0]! as unknown as Record<string, unknown>;
    assert.deepEqual(call.extra_content, signature, route);
    const buffered = await client.chat.completions.create(request);
    assert.deepEqual((buffered.choices[0]!.message.tool_calls![0]! as unknown as Record<string, unknown>).extra_content, signature, `${route}, buffered`);
  }
  assert.equal(upstream.requests.length, 1, 'the repeats were cache hits');
});

test('a streamed tool call that does not match its schema is never emitted: the stream ends with an error', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    sendChunks(res, [
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_x', type: 'function', function: { name: 'get_weather', arguments: '{"town":1}' } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]);
  });
  const { address, app } = await gateway(t, upstream);
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [WEATHER_TOOL], stream: true }),
  });
  const text = await response.text();
  assert.doesNotMatch(text, /"town"/);
  assert.doesNotMatch(text, /\[DONE\]/);
  assert.match(text, /"code":"invalid_tool_call"/);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'invalid_tool_call');
});

test('streamed tool-call arguments nested past 128 levels (JSON inside a string) are an invalid tool call, never emitted', async (t) => {
  const deep = `{"city":"Oslo","extra":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    sendChunks(res, [
      { ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_deep', type: 'function', function: { name: 'get_weather', arguments: deep } }] }, finish_reason: null }] },
      { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]);
  });
  const { address, app } = await gateway(t, upstream);
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'deep arguments' }], tools: [WEATHER_TOOL], stream: true }),
  });
  const text = await response.text();
  assert.doesNotMatch(text, /call_deep/);
  assert.match(text, /"code":"invalid_tool_call"/);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'invalid_tool_call');
  assert.match(run.error.message, /nest more than 128 levels deep/);
});

test('upstream 429 reaches the client as 429 with retry-after in the chat-completions shape', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 429, { error: { message: 'slow down', type: 'rate_limit_error' } }, { 'retry-after': '7' }),
  );
  const { client, address } = await gateway(t, upstream);
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.RateLimitError);
    assert.equal(error.headers.get('retry-after'), '7');
    assert.match(error.headers.get('x-svc-run-id') ?? '', /^run_/);
    return true;
  });
  const raw = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'y' }] }),
  });
  assert.equal(raw.status, 429);
  const body = await raw.json();
  assert.equal(validateAgainst('ErrorResponse', body), null);
});

test('5xx (an overloaded 529 too) fails open to the configured fallback upstream, recorded as fallback with both attempts', async (t) => {
  let status = 503;
  const primary = await startFakeUpstream(t, (_req, res) => sendJson(res, status, { error: { message: 'overloaded' } }));
  const secondary = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('from the fallback')));
  const { client, app } = await gateway(t, primary, { CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: secondary.baseUrl });
  for (status of [503, 529]) {
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `x ${status}` }] }).withResponse();
    assert.equal(data.choices[0]!.message.content, 'from the fallback');
    const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
    assert.deepEqual(detail.run.routeExplanation.fallback, { from: 'chatcomp', to: 'chatcomp-fallback', reason: 'upstream_error' });
    assert.deepEqual(
      detail.attempts.map((attempt: any) => [attempt.provider, attempt.outcome, attempt.upstreamStatus]),
      [
        ['chatcomp', 'failed', status],
        ['chatcomp-fallback', 'success', null],
      ],
    );
    assert.ok(detail.events.some((event: any) => event.type === 'provider.fallback'));
  }

  // Without a fallback the client sees a classified 502 and the run is failed.
  const alone = await startFakeUpstream(t, (_req, res) => sendJson(res, 500, { error: { message: 'boom' } }));
  const single = await gateway(t, alone);
  await assert.rejects(single.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 502);
    return true;
  });
});

test('an upstream answer that is not JSON becomes a classified 502 recorded on the run', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"choices": [oops');
  });
  const { address, app } = await gateway(t, upstream);
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }),
  });
  assert.equal(response.status, 502);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
  assert.equal(run.run.status, 'failed');
  assert.equal(run.attempts[0].errorKind, 'bad_response');
});

test('a buffered answer whose choices the wire cannot read is the upstream\'s bad answer (bad_response), not a TypeError recorded as a network failure', async (t) => {
  const answers: Record<string, unknown[]> = {
    'a null choice': [null],
    'a choice without a message': [{ index: 0, finish_reason: 'stop' }],
    'tool_calls not an array': [{ index: 0, message: { role: 'assistant', content: null, tool_calls: 'x' }, finish_reason: 'tool_calls' }],
    'a null tool call': [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [null] }, finish_reason: 'tool_calls' }],
    'a tool call without its function': [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function' }] }, finish_reason: 'tool_calls' }],
  };
  let choices: unknown[] = [];
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, { ...completion('unused'), choices }));
  const { address, app } = await gateway(t, upstream);
  for (const [name, answer] of Object.entries(answers)) {
    choices = answer;
    const response = await fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: name }], tools: [WEATHER_TOOL] }),
    });
    assert.equal(response.status, 502, name);
    assert.equal(validateAgainst('ErrorResponse', await response.json()), null, name);
    const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
    assert.equal(detail.run.status, 'failed', name);
    assert.equal(detail.run.error.kind, 'bad_response', name);
    assert.doesNotMatch(detail.run.error.message, /Cannot read|is not a function|iterable/, name);
  }
});

test('an upstream answer nested more than 128 levels deep is a classified 502, buffered or streamed, recorded as failed', async (t) => {
  const deep = `${'['.repeat(20_000)}${']'.repeat(20_000)}`;
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(completion('deep')).replace(/}$/, `,"extra":${deep}}`));
      return;
    }
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('first '))}\n\n`);
    res.write(`data: ${JSON.stringify(contentChunk('deep')).replace(/}$/, `,"extra":${deep}}`)}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  const { address, app } = await gateway(t, upstream);
  const ask = (stream: boolean) =>
    fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `deep ${stream}` }], stream }),
    });
  const buffered = await ask(false);
  assert.equal(buffered.status, 502);
  assert.equal(((await buffered.json()) as { error: { type: string } }).error.type, 'server_error');
  const streamed = await ask(true);
  const text = await streamed.text();
  assert.match(text, /first /);
  assert.match(text, /"error"/);
  assert.doesNotMatch(text, /\[DONE\]/);
  for (const response of [buffered, streamed]) {
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed');
    assert.equal(run.error.kind, 'bad_response');
    assert.match(run.error.message, /nests more than 128 levels deep/);
  }
});

test('a stream cut off by the upstream ends with an error event and a failed run with partial usage', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendChunks(res, [contentChunk('partial '), contentChunk('answer')], false));
  const { address, app } = await gateway(t, upstream);
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream: true }),
  });
  const text = await response.text();
  assert.match(text, /partial /);
  assert.doesNotMatch(text, /\[DONE\]/);
  assert.match(text, /"error"/);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'bad_response');
  assert.ok(run.usage.completionTokens > 0, 'partial usage is recorded');
});

test('a slow upstream times out with a 504 (bounded provider timeouts)', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => untilClientCloses(res));
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-x', CHATCOMP_BASE_URL: upstream.baseUrl, SVC_PROVIDER_TIMEOUT_MS: '300' } });
  const response = await built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] } });
  assert.equal(response.statusCode, 504);
  const run = json(await built.app.inject({ url: `/api/v1/runs/${response.headers['x-svc-run-id']}` })).run;
  assert.equal(run.error.kind, 'timeout');
});

test('a client abort mid-stream aborts the upstream call and the run is still finalised', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    await streamUntilClientCloses(res, (i) => res.write(`data: ${JSON.stringify(contentChunk(`piece ${i} `))}\n\n`));
    res.end();
  });
  const { client, app } = await gateway(t, upstream);
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'long story' }], stream: true },
    { signal: controller.signal },
  );
  let received = 0;
  try {
    for await (const _chunk of stream) {
      received += 1;
      if (received === 3) controller.abort();
    }
  } catch (error) {
    assert.ok(error instanceof OpenAI.APIUserAbortError || (error as Error).name === 'AbortError', String(error));
  }
  assert.ok(received >= 3 && received < 200, 'the client stopped reading early');
  const closed = await upstream.clientClosed();
  assert.equal(closed.clientClosed, true);
  const [run] = await finishedRuns(app);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'aborted');
  assert.ok(run.usage.completionTokens > 0);
  const detail = json(await app.inject({ url: `/api/v1/runs/${run.id}` }));
  assert.equal(detail.attempts[0].outcome, 'aborted');
});

test('observe-mode keys record ghost savings for answers they could have had from the cache', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('cached later')));
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-x', CHATCOMP_BASE_URL: upstream.baseUrl, SVC_API_KEY: 'bootstrap-token-abcdefghijklmnop' } });
  const admin = bearer('bootstrap-token-abcdefghijklmnop');
  const observe = json(await built.app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'o', mode: 'observe' } })).token;
  const payload = { model: 'gpt-4o', messages: [{ role: 'user', content: 'ghost' }] };
  await built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload, headers: admin });
  const observed = await built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload, headers: bearer(observe) });
  assert.equal(observed.headers['x-svc-route'], 'live');
  assert.equal(upstream.requests.length, 2);
  const run = json(await built.app.inject({ url: `/api/v1/runs/${observed.headers['x-svc-run-id']}`, headers: admin })).run;
  assert.ok(run.ghostSavedUsd > 0);
  assert.equal(run.savedUsd, 0);
  assert.equal(run.routeExplanation.estimatedSavings.ghost, true);
});

test('a client that leaves before the first event still gets its run finalised and the upstream released', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    await sleep(400);
    await streamUntilClientCloses(res, (i) => res.write(`data: ${JSON.stringify(contentChunk(`late ${i} `))}\n\n`));
    res.end();
  });
  const { address, app } = await gateway(t, upstream);
  const controller = new AbortController();
  const response = await fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'leave early' }], stream: true }),
    signal: controller.signal,
  });
  const runId = response.headers.get('x-svc-run-id');
  controller.abort();
  await upstream.clientClosed();
  const { run } = await finishedRun(app, runId);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'aborted');
});

test('a stream that fails before its first event fails open to the fallback, or answers its own status: never a 200 carrying an error', async (t) => {
  // How the primary fails before its first event, and the kind each failure is recorded as.
  const failures = {
    reset: 'network',
    'error-event': 'upstream_error',
    // `data: [DONE]` alone: a stream that ended without any event.
    'done-only': 'bad_response',
    // Chunks the assembler cannot read: the upstream's bad answer (they were TypeErrors recorded as network failures).
    'null-choice': 'bad_response',
    'tool-calls-not-array': 'bad_response',
  } as const;
  type Failure = keyof typeof failures;
  let primaryFails: Failure = 'reset';
  const primary = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const base = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
    if (primaryFails === 'reset') res.socket!.destroy();
    else if (primaryFails === 'error-event') res.end(`data: ${JSON.stringify({ error: { message: 'the model is overloaded', type: 'server_error' } })}\n\n`);
    else if (primaryFails === 'done-only') res.end('data: [DONE]\n\n');
    else if (primaryFails === 'null-choice') res.end(`data: ${JSON.stringify({ ...base, choices: [null] })}\n\ndata: [DONE]\n\n`);
    else res.end(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { tool_calls: 5 }, finish_reason: null }] })}\n\ndata: [DONE]\n\n`);
  });
  const secondary = await startFakeUpstream(t, (_req, res) => sendChunks(res, [contentChunk('from the '), { ...contentChunk('fallback'), choices: [{ index: 0, delta: { content: 'fallback' }, finish_reason: 'stop' }] }]));
  const { client, app } = await gateway(t, primary, { CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: secondary.baseUrl });
  for (const failure of Object.keys(failures) as Failure[]) {
    primaryFails = failure;
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${failure} before the first event` }], stream: true })
      .withResponse();
    assert.equal(response.status, 200, failure);
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text, 'from the fallback', failure);
    const runId = response.headers.get('x-svc-run-id');
    const detail = await finishedRun(app, runId);
    assert.equal(detail.run.status, 'completed', failure);
    assert.deepEqual(detail.run.routeExplanation.fallback, { from: 'chatcomp', to: 'chatcomp-fallback', reason: failures[failure] }, failure);
    assert.deepEqual(
      detail.attempts.map((attempt: any) => [attempt.provider, attempt.outcome]),
      [
        ['chatcomp', 'failed'],
        ['chatcomp-fallback', 'success'],
      ],
      failure,
    );
  }

  // Alone, the same failures are answered with their status in the chat-completions error shape, the run failed.
  const single = await gateway(t, primary);
  for (const failure of Object.keys(failures) as Failure[]) {
    primaryFails = failure;
    const raw = await fetch(`${single.address}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `alone ${failure}` }], stream: true }),
    });
    assert.equal(raw.status, 502, failure);
    assert.match(raw.headers.get('content-type') ?? '', /application\/json/, failure);
    const body = await raw.json();
    assert.equal(validateAgainst('ErrorResponse', body), null, failure);
    const run = json(await single.app.inject({ url: `/api/v1/runs/${raw.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', failure);
    assert.equal(run.error.kind, failures[failure], failure);
    assert.doesNotMatch(run.error.message, /Cannot read|is not iterable/, failure);
  }
  primaryFails = 'reset';
  await assert.rejects(
    single.client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'through the SDK' }], stream: true }),
    (error: unknown) => error instanceof OpenAI.APIError && error.status === 502,
  );
});

test('a client that leaves while svc waits for the first event releases the upstream at once, and its run is finalised as aborted', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    // Headers only: svc waits for the first event before answering the client, who leaves first.
    if (!(await streamUntilClientCloses(res, () => undefined, 50))) sendChunks(res, [contentChunk('too late')]);
  });
  const { address, app } = await gateway(t, upstream);
  const controller = new AbortController();
  const asked = fetch(`${address}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'leave before the first event' }], stream: true }),
    signal: controller.signal,
  });
  while (upstream.requests.length === 0) await sleep(10);
  controller.abort();
  await assert.rejects(asked);
  const closed = await upstream.clientClosed();
  assert.equal(closed.clientClosed, true);
  const runs = await finishedRuns(app, '?limit=5');
  assert.equal(runs.length, 1);
  assert.equal(runs[0].status, 'failed');
  assert.equal(runs[0].error.kind, 'aborted');
});

test("a chat stream whose first event is an upstream's error is answered as the HTTP error its code stands for, as on the responses wire: a rate limit 429 and a server error failed over, an invalid request the upstream's 400, an unknown code a 502", async (t) => {
  const cases: Array<{ error: object; status: number; failsOver: boolean }> = [
    { error: { code: 'rate_limit_exceeded', type: 'requests', message: 'Rate limit reached for requests' }, status: 429, failsOver: true },
    { error: { code: null, type: 'server_error', message: 'The server had an error' }, status: 502, failsOver: true },
    { error: { code: 'context_length_exceeded', type: 'invalid_request_error', message: 'Too long' }, status: 400, failsOver: false },
    { error: { code: null, type: 'weird', message: 'Something went wrong' }, status: 502, failsOver: false },
  ];
  let current = cases[0]!;
  const primary = await startFakeUpstream(t, (_req, res) => sendChunks(res, [{ error: current.error }], false));
  const fallback = await startFakeUpstream(t, (_req, res) => sendChunks(res, [contentChunk('From the fallback')]));
  const alone = await gateway(t, primary);
  const both = await gateway(t, primary, { CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl });
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true });
  for (const each of cases) {
    current = each;
    const label = JSON.stringify(each.error);
    const { refused, answered } = await expectFailureAnswered({ alone, both, fallback }, { ...each, path: '/v1/chat/completions', body, label });
    assert.doesNotMatch(JSON.stringify(refused), /sk-upstream-secret/, label);
    if (each.failsOver) assert.match(answered, /From the fallback/, label);
  }
});

test('an empty choice at an index that never started (index 1 with an empty delta, or only finish_reason: null, as real upstreams send) is skipped, not a bad_response: the stream completes with the choice that did, live and replayed', async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
  let empty: unknown = null;
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      delta({ role: 'assistant', content: 'one ' }),
      { ...UPSTREAM_CHUNK, choices: [empty] },
      delta({ content: 'choice' }),
      { ...UPSTREAM_CHUNK, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }, empty] },
      { ...UPSTREAM_CHUNK, choices: [empty], usage },
    ]),
  );
  const { client } = await gateway(t, upstream);
  const choices = [{ index: 1, delta: {} }, { index: 1, delta: {}, finish_reason: null }, { index: 1, finish_reason: null }, { index: 2, delta: {}, finish_reason: null, logprobs: null }];
  for (const [at, choice] of choices.entries()) {
    empty = choice;
    const label = JSON.stringify(choice);
    const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: `an empty choice ${label}` }], stream_options: { include_usage: true } };
    for (const route of ['live', 'exact_cache']) {
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      const final = await client.chat.completions.stream(request).on('chunk', (chunk) => chunks.push(structuredClone(chunk))).finalChatCompletion();
      for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, `${label} ${route}`);
      assert.deepEqual(final.choices.map((c) => [c.index, c.message.content, c.finish_reason]), [[0, 'one choice', 'stop']], `${label} ${route}`);
      assert.deepEqual(final.usage, usage, `${label} ${route}`);
    }
    assert.equal(upstream.requests.length, at + 1, `${label}: the repeat was a cache hit`);
  }
});

test('a streamed chunk carrying only logprobs (its delta empty) is relayed, not dropped', async (t) => {
  const logprobs = (token: string) => ({ content: [{ token, logprob: -0.1, bytes: [...Buffer.from(token)], top_logprobs: [] }], refusal: null });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      contentChunk('Hel'),
      { ...contentChunk(''), choices: [{ index: 0, delta: {}, logprobs: logprobs('Hel'), finish_reason: null }] },
      contentChunk('lo'),
      { ...contentChunk(''), choices: [{ index: 0, delta: {}, logprobs: logprobs('lo'), finish_reason: 'stop' }] },
    ]),
  );
  const { client } = await gateway(t, upstream);
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], stream: true, logprobs: true });
  const tokens: string[] = [];
  let text = '';
  for await (const chunk of stream) {
    for (const entry of chunk.choices[0]?.logprobs?.content ?? []) tokens.push(entry.token);
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  assert.equal(text, 'Hello');
  assert.deepEqual(tokens, ['Hel', 'lo']);
});

test("an upstream's 400 naming a field reaches the client with that field as param, as the SDK reads it", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 400, { error: { message: "Invalid value for 'temperature'.", type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' } }),
  );
  const { client } = await gateway(t, upstream);
  const refused = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] }).catch((error: unknown) => error);
  assert.ok(refused instanceof OpenAI.BadRequestError, String(refused));
  assert.equal(refused.param, 'temperature');
  assert.equal(refused.code, 'upstream_rejected');
  assert.match(refused.message, /Invalid value for 'temperature'/);
});

test("a choice's role reaches the client on the choice's first delta when the upstream's first chunk also completes calls (Ollama's calls in one delta, a whole call beside its finish): a client reading the role from the first delta keeps the calls", async (t) => {
  const call = (index: number, city: string) => ({ index, id: `call_${city}`, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } });
  const answers: unknown[][] = [
    // Every call of the answer in the first delta, beside the role, as Ollama's compatible endpoint sends them.
    [delta({ role: 'assistant', content: '', tool_calls: [call(0, 'Oslo'), call(1, 'Lima')] }), delta({}, 'tool_calls')],
    // A whole call, the role and the finish in one chunk.
    [{ ...UPSTREAM_CHUNK, choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [call(0, 'Oslo')] }, finish_reason: 'tool_calls' }] }],
  ];
  const upstream = await startFakeUpstream(t, (request, res) => sendChunks(res, answers[upstream.requests.indexOf(request)]!));
  const { client } = await gateway(t, upstream);
  for (const [at, cities] of [['Oslo', 'Lima'], ['Oslo']].entries()) {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `weather ${at}` }], tools: [WEATHER_TOOL], stream: true });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
    const deltas = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta));
    assert.equal(deltas[0]!.role, 'assistant', JSON.stringify(deltas));
    // Sent once, as the upstream sent it.
    assert.equal(deltas.filter((d) => d.role !== undefined).length, 1, JSON.stringify(deltas));
    assert.deepEqual(emittedCalls(chunks), cities.map((city, index) => [index, `call_${city}`, 'get_weather', { city }]));
    assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'tool_calls');
  }
});
