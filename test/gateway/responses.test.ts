/**
 * The responses wire with the official `openai` client (`responses.create`, `responses.stream()`) against a listening
 * svc, payloads validated against the OpenAPI document, and a fake upstream for the live path.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { bearer, build, json } from '../support/build.ts';
import { sendJson, startFakeUpstream, startSse, streamUntilClientCloses, type FakeUpstream } from '../support/fake-upstream.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectFailureAnswered } from '../support/failover.ts';
import { OPENAPI_PATH, validateAgainst } from '../support/openapi.ts';
import { ROOT } from '../support/process.ts';
import { finishedRuns } from '../support/finished-runs.ts';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

async function listening(t: TestContext, env: Record<string, string> = {}) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0 }) };
}

let counter = 0;
const input = (text = 'hello') => `${text} #${++counter} ${process.hrtime.bigint()}`;

test('responses.create: a Response that validates, output_text, usage, evidence headers, and a cache hit', async (t) => {
  const { client, app } = await listening(t);
  const params = { model: 'gpt-4o-mini', input: input('what is svc'), instructions: 'be brief' };
  const { data, response } = await client.responses.create(params).withResponse();
  assert.equal(data.object, 'response');
  assert.equal(data.status, 'completed');
  assert.ok(data.output_text.length > 0);
  assert.ok(data.usage!.input_tokens > 0);
  assert.equal(validateAgainst('Response', data), null);
  assert.equal(response.headers.get('x-svc-route'), 'live');
  const again = await client.responses.create(params).withResponse();
  assert.equal(again.response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(again.data.output_text, data.output_text);
  assert.notEqual(again.data.id, data.id);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.wire, 'responses');
  assert.equal(run.status, 'completed');
});

test("the mock's Response echoes the request's text format and reasoning effort, as an upstream's does", async (t) => {
  const { client } = await listening(t);
  const format = { type: 'json_schema' as const, name: 'answer', schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false }, strict: true };
  const data = await client.responses.create({ model: 'gpt-4o-mini', input: input('shaped'), text: { format, verbosity: 'low' }, reasoning: { effort: 'low' } });
  assert.deepEqual(data.text, { format, verbosity: 'low' });
  assert.equal(data.reasoning?.effort, 'low');
  assert.equal(validateAgainst('Response', data), null);
  const plain = await client.responses.create({ model: 'gpt-4o-mini', input: input('plain') });
  assert.deepEqual(plain.text, { format: { type: 'text' } });
  assert.equal(plain.reasoning?.effort, null);
});

test("the mock's Response echoes the request's max_tool_calls (null when absent), buffered and streamed, as the document's Response and an upstream's have it; one not an integer or null is a 400 naming it before any run", async (t) => {
  const { client, app } = await listening(t);
  // Not in this client's types: the SDK sends unknown fields as given, and its Response keeps them.
  const create = (fields: Record<string, unknown>) => client.responses.create({ model: 'gpt-4o-mini', input: input('bounded'), ...fields } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  const echoed = (response: object) => (response as { max_tool_calls?: unknown }).max_tool_calls;
  const bounded = await create({ tools: [WEATHER], max_tool_calls: 2 });
  assert.equal(echoed(bounded), 2);
  assert.equal(validateAgainst('Response', bounded), null);
  const streamed = await client.responses.stream({ model: 'gpt-4o-mini', input: input('bounded'), tools: [WEATHER], max_tool_calls: 3 } as never).finalResponse();
  assert.equal(echoed(streamed), 3);
  assert.equal(echoed(await create({})), null);
  assert.equal(echoed(await create({ max_tool_calls: null })), null);
  const runs = json(await app.inject({ url: '/api/v1/runs', headers: bearer('sk-local-dev') })).runs.length;
  for (const value of ['2', 1.5]) {
    const error = await create({ max_tool_calls: value }).then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.BadRequestError, `${JSON.stringify(value)}: answered instead of refused`);
    assert.equal(error.param, 'max_tool_calls');
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs', headers: bearer('sk-local-dev') })).runs.length, runs, 'a refusal before the run records none');
});

test('responses.stream(): ordered events with consecutive sequence numbers that validate, function calls, finalResponse', async (t) => {
  const { client } = await listening(t);
  const params = { model: 'gpt-4o-mini', input: input('weather in Oslo and Lima'), tools: [WEATHER], tool_choice: 'required' as const };
  const stream = client.responses.stream(params);
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  assert.equal(events[0].type, 'response.created');
  assert.equal(events.at(-1).type, 'response.completed');
  assert.deepEqual(
    events.map((event) => event.sequence_number),
    events.map((_, index) => index),
  );
  for (const event of events) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
  const calls = final.output.filter((item) => item.type === 'function_call');
  assert.ok(calls.length >= 1);
  for (const call of calls) {
    assert.equal(call.type === 'function_call' && call.name, 'get_weather');
    assert.equal(typeof JSON.parse((call as { arguments: string }).arguments).city, 'string');
  }
  // Replayed from the cache as a stream with the same shape.
  const replay = client.responses.stream(params);
  const replayed: any[] = [];
  for await (const event of replay) replayed.push(event);
  assert.deepEqual(
    replayed.map((event) => event.type),
    events.map((event) => event.type),
  );
  for (const event of replayed) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
});

test('every reasoning effort and service_tier of the OpenAPI document is accepted', async (t) => {
  const { client } = await listening(t);
  const schemas = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')).components.schemas;
  const values = (name: string) => (schemas[name].anyOf as Array<{ enum?: string[] }>).flatMap((branch) => branch.enum ?? []);
  // 'xhigh', 'max' and 'fast' were 400s.
  for (const effort of values('ReasoningEffort')) {
    const response = await client.responses.create({ model: 'gpt-5', input: input(), reasoning: { effort } } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    assert.equal(response.status, 'completed', effort);
  }
  for (const service_tier of values('ServiceTier')) {
    const response = await client.responses.create({ model: 'gpt-5', input: input(), service_tier } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    assert.equal(response.status, 'completed', service_tier);
  }
});

test('unsupported capabilities are clear 400s in the chat-completions error shape and create no run', async (t) => {
  const { app } = await build(t);
  const cases: Array<[string, Record<string, unknown>]> = [
    ['previous_response_id', { model: 'gpt-4o', input: 'x', previous_response_id: 'resp_1' }],
    ['conversation', { model: 'gpt-4o', input: 'x', conversation: 'conv_1' }],
    ['hosted tool', { model: 'gpt-4o', input: 'x', tools: [{ type: 'web_search_preview' }] }],
    ['background', { model: 'gpt-4o', input: 'x', background: true }],
    ['missing input', { model: 'gpt-4o' }],
    ['missing model', { input: 'x' }],
    ['bad json schema', { model: 'gpt-4o', input: 'x', text: { format: { type: 'json_schema', name: 's', schema: { type: 'bogus' } } } }],
    ['tool_choice undeclared', { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'function', name: 'nope' } }],
    ['two function tools of one name', { model: 'gpt-4o', input: 'x', tools: [WEATHER, { ...WEATHER, parameters: { type: 'object' } }] }],
    ['a function and a custom tool of one name', { model: 'gpt-4o', input: 'x', tools: [WEATHER, { type: 'custom', name: WEATHER.name }] }],
    ['two custom tools of one name', { model: 'gpt-4o', input: 'x', tools: [{ type: 'custom', name: 'run' }, { type: 'custom', name: 'run' }] }],
    ['tool_choice hosted', { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'web_search_preview' } }],
    ['tool_choice mcp', { model: 'gpt-4o', input: 'x', tool_choice: { type: 'mcp', server_label: 'deepwiki' } }],
    ['allowed_tools hosted', { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'get_weather' }, { type: 'image_generation' }] } }],
    ['allowed_tools undeclared', { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'nope' }] } }],
    ['metadata of 17 keys', { model: 'gpt-4o', input: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) }],
    ['allowed_tools without tools', { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'allowed_tools', mode: 'auto' } }],
  ];
  for (const [name, payload] of cases) {
    const response = await app.inject({ method: 'POST', url: '/v1/responses', payload });
    assert.equal(response.statusCode, 400, name);
    const body = json(response);
    assert.equal(body.error.type, 'invalid_request_error', name);
    assert.equal(validateAgainst('ErrorResponse', body), null, name);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  const allowed = { model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }] } };
  assert.equal((await app.inject({ method: 'POST', url: '/v1/responses', payload: allowed })).statusCode, 200);
  // The mock calls only a tool the choice allows, though the input names another.
  const other = { ...WEATHER, name: 'get_time' };
  const onlyTime = { model: 'gpt-4o', input: 'what is get_weather saying', tools: [WEATHER, other], tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_time' }] } };
  const answer = json(await app.inject({ method: 'POST', url: '/v1/responses', payload: onlyTime }));
  assert.deepEqual(answer.output.filter((item: any) => item.type === 'function_call').map((item: any) => item.name), ['get_time']);
});

function upstreamEvents(text: string) {
  const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], usage: null };
  const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
  return [
    { type: 'response.created', sequence_number: 5, response },
    { type: 'response.output_item.added', sequence_number: 6, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', sequence_number: 7, item_id: 'msg_up', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', sequence_number: 8, item_id: 'msg_up', output_index: 0, content_index: 0, delta: text, logprobs: [] },
    { type: 'response.output_text.done', sequence_number: 9, item_id: 'msg_up', output_index: 0, content_index: 0, text, logprobs: [] },
    { type: 'response.content_part.done', sequence_number: 10, item_id: 'msg_up', output_index: 0, content_index: 0, part: item.content[0] },
    { type: 'response.output_item.done', sequence_number: 11, output_index: 0, item },
    { type: 'response.completed', sequence_number: 12, response: { ...response, status: 'completed', output: [item], usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } } },
  ];
}

function writeEvents(res: import("node:http").ServerResponse, events: ReadonlyArray<object>) {
  for (const event of events as Array<{ type: string }>) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
}

async function liveGateway(t: TestContext, upstream: FakeUpstream) {
  return listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
}

/**
 * Gateways for a failover test: one with `primary` its only provider, one with a fallback behind it that answers
 * "From the fallback" (buffered or streamed), and that fallback.
 */
async function withFallback(t: TestContext, primary: FakeUpstream) {
  const fallback = await startFakeUpstream(t, (request, res) => {
    if (!(request.body as { stream?: boolean }).stream) return sendJson(res, 200, upstreamEvents('From the fallback').at(-1)!.response);
    startSse(res);
    writeEvents(res, upstreamEvents('From the fallback'));
    res.end();
  });
  const alone = await liveGateway(t, primary);
  const both = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: primary.baseUrl, CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl });
  return { alone, both, fallback };
}

test('live responses: the upstream /responses endpoint, sequence numbers renumbered, usage recorded', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, upstreamEvents('From upstream'));
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input() });
  const events: any[] = [];
  for await (const event of stream) events.push(event);
  const final = await stream.finalResponse();
  const message = final.output.find((item) => item.type === 'message') as { content: Array<{ text: string }> } | undefined;
  assert.equal(message?.content[0]?.text, 'From upstream');
  assert.deepEqual(
    events.map((event) => event.sequence_number),
    events.map((_, index) => index),
  );
  assert.equal(upstream.requests[0]!.url, '/v1/responses');
  assert.equal(upstream.requests[0]!.headers.authorization, 'Bearer sk-upstream');
  const run = json(await app.inject({ url: '/api/v1/runs' })).runs[0];
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.usage, { promptTokens: 9, completionTokens: 3, totalTokens: 12 });
});

test('live responses: a truncated stream and an upstream response.failed end with response.failed and a failed run (with the usage and the error code the failed response reported)', async (t) => {
  let mode: 'truncated' | 'failed' | 'failed-unknown-code' | 'bad-delta' = 'truncated';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = upstreamEvents('partial answer');
    if (mode === 'truncated') writeEvents(res, events.slice(0, 4));
    else if (mode === 'failed' || mode === 'failed-unknown-code') {
      const code = mode === 'failed' ? 'invalid_prompt' : 'model_melted';
      writeEvents(res, events.slice(0, 2));
      writeEvents(res, [{ type: 'response.failed', sequence_number: 99, response: { ...events[0]!.response, status: 'failed', error: { code, message: 'boom' }, usage: { input_tokens: 11, output_tokens: 4, total_tokens: 15 } } } as never]);
    } else writeEvents(res, [events[0]!, { ...events[3]!, item_id: 'msg_never_announced' }]);
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  for (const current of ['truncated', 'failed', 'failed-unknown-code', 'bad-delta'] as const) {
    mode = current;
    const response = await fetch(`${address}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true }),
    });
    const text = await response.text();
    assert.match(text, /event: response\.failed/, current);
    assert.doesNotMatch(text, /event: response\.completed/, current);
    const failed = JSON.parse(text.trim().split('\n').at(-1)!.slice('data: '.length));
    assert.equal(failed.response.error.code, current === 'failed' ? 'invalid_prompt' : 'server_error', current);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', current);
    if (current === 'failed') assert.deepEqual(run.usage, { promptTokens: 11, completionTokens: 4, totalTokens: 15 });
  }
});

test("live responses: the upstream's own words in a response.failed or an error event are recorded with its key masked", async (t) => {
  const key = 'upstream-key-0123456789';
  let failWith: 'response.failed' | 'error' = 'response.failed';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = upstreamEvents('partial answer');
    const message = `Incorrect API key provided: ${key}.`;
    writeEvents(res, events.slice(0, 2));
    if (failWith === 'error') writeEvents(res, [{ type: 'error', code: 'invalid_api_key', message, param: null, sequence_number: 2 } as never]);
    else writeEvents(res, [{ type: 'response.failed', sequence_number: 2, response: { ...events[0]!.response, status: 'failed', error: { code: 'server_error', message } } } as never]);
    res.end();
  });
  const { address, app } = await listening(t, { CHATCOMP_API_KEY: key, CHATCOMP_BASE_URL: upstream.baseUrl });
  for (const current of ['response.failed', 'error'] as const) {
    failWith = current;
    const response = await fetch(`${address}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true }),
    });
    const text = await response.text();
    assert.match(text, /event: response\.failed/, current);
    assert.ok(!text.includes(key), current);
    const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
    assert.equal(detail.run.status, 'failed', current);
    assert.match(detail.run.error.message, /Incorrect API key provided: \[redacted\]/, current);
    assert.ok(!JSON.stringify(detail).includes(key), `${current}: the key is nowhere in the run's evidence`);
  }
});

test('live responses: an upstream event that is not a typed event object ends the stream with response.failed, is never relayed, and nothing is cached', async (t) => {
  let data = '';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = upstreamEvents('partial answer');
    writeEvents(res, events.slice(0, 4));
    res.write(`data: ${data}\n\n`);
    writeEvents(res, events.slice(4));
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  const cases: Array<[string, string]> = [
    ['null', 'bad_response'],
    ['42', 'bad_response'],
    ['"text"', 'bad_response'],
    ['[1]', 'bad_response'],
    ['{"foo":1}', 'bad_response'],
    ['{"type":5}', 'bad_response'],
    // A type that is not a name: relayed as the frame's `event:` line, its line breaks would let the upstream add
    // events of its choosing (a response.completed ending the stream early).
    ['{"type":"x\\n\\nevent: response.completed\\ndata: {}"}', 'bad_response'],
    ['{"type":"x\\rdata: {}"}', 'bad_response'],
    ['{"type":""}', 'bad_response'],
    // An error in the chat-completions shape, as compatible servers send one mid-stream.
    ['{"error":{"message":"the model crashed","type":"server_error"}}', 'upstream_error'],
  ];
  for (const [raw, kind] of cases) {
    data = raw;
    const body = JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true });
    const post = () => fetch(`${address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const response = await post();
    const text = await response.text();
    const names = [...text.matchAll(/^event: (.*)$/gm)].map((match) => match[1]);
    assert.deepEqual(names, ['response.created', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.failed'], raw);
    assert.doesNotMatch(text, /the model crashed/, raw);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', raw);
    assert.equal(run.error.kind, kind, raw);
    const again = await post();
    await again.text();
    assert.equal(again.headers.get('x-svc-route'), 'live', raw);
  }
});

test('live responses: a response whose output is not a list of typed items is a bad_response, buffered, created or completed', async (t) => {
  let broken: { created?: unknown; completed?: unknown; buffered?: unknown } = {};
  const upstream = await startFakeUpstream(t, (request, res) => {
    const events = upstreamEvents('An answer.');
    const completed = events.at(-1)!.response as Record<string, unknown>;
    if (request.body.stream !== true) return sendJson(res, 200, broken.buffered);
    startSse(res);
    const created = 'created' in broken ? { ...events[0]!, response: broken.created } : events[0]!;
    const last = 'completed' in broken ? { ...events.at(-1)!, response: broken.completed } : { ...events.at(-1)!, response: completed };
    writeEvents(res, [created, ...events.slice(1, -1), last]);
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  const answer = upstreamEvents('An answer.').at(-1)!.response as Record<string, unknown>;
  const cases: Array<[string, typeof broken, boolean, number]> = [
    ['completed null', { completed: null }, true, 200],
    ['completed output [null]', { completed: { ...answer, output: [null] } }, true, 200],
    ['completed output [42]', { completed: { ...answer, output: [42] } }, true, 200],
    ['created null', { created: null }, true, 502],
    ['created without output', { created: { id: 'resp_up', object: 'response', status: 'in_progress' } }, true, 502],
    ['buffered output [null]', { buffered: { ...answer, output: [null] } }, false, 502],
    ['buffered output [42]', { buffered: { ...answer, output: [42] } }, false, 502],
  ];
  for (const [name, current, stream, status] of cases) {
    broken = current;
    const body = JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream });
    const post = () => fetch(`${address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const response = await post();
    const text = await response.text();
    assert.equal(response.status, status, name);
    if (status === 200) {
      assert.match(text, /event: response\.failed/, name);
      assert.doesNotMatch(text, /event: response\.completed/, name);
    } else assert.equal(validateAgainst('ErrorResponse', JSON.parse(text)), null, name);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', name);
    assert.equal(run.error.kind, 'bad_response', name);
    const again = await post();
    await again.text();
    assert.equal(again.headers.get('x-svc-route'), 'live', name);
  }
});

test('live responses: events out of their item\'s output_index or content part are a bad_response (the SDK indexes its output by them); a message of two text parts is whole', async (t) => {
  let mode = '';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created] = upstreamEvents('unused');
    const parts = [{ type: 'output_text', text: 'First part. ', annotations: [] }, { type: 'output_text', text: 'Second part.', annotations: [] }].slice(0, mode === 'whole' ? 2 : 1);
    const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: parts };
    const at = (index: number) => ({ item_id: 'msg_up', output_index: 0, content_index: index });
    const added = mode === 'item output_index' ? 2 : 0;
    const events: object[] = [created!, { type: 'response.output_item.added', sequence_number: 1, output_index: added, item: { ...item, status: 'in_progress', content: [] } }];
    for (const [index, part] of parts.entries()) {
      events.push({ type: 'response.content_part.added', ...at(index), content_index: mode === 'part content_index' ? index + 1 : index, part: { ...part, text: '' } });
      const delta = { ...at(index), ...(mode === 'delta output_index' ? { output_index: 1 } : {}), ...(mode === 'delta content_index' ? { content_index: 5 } : {}) };
      events.push({ type: 'response.output_text.delta', ...delta, delta: part.text, logprobs: [] });
      events.push({ type: 'response.output_text.done', ...at(index), text: part.text, logprobs: [] });
      events.push({ type: 'response.content_part.done', ...at(index), part });
    }
    events.push({ type: 'response.output_item.done', output_index: added, item });
    events.push({ type: 'response.completed', response: { ...created!.response, status: 'completed', output: [item], usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } } });
    writeEvents(res, events);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const current of ['item output_index', 'delta output_index', 'part content_index', 'delta content_index', 'whole']) {
    mode = current;
    const params = { model: 'gpt-4o-mini', input: input() };
    const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of data) events.push(event);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    if (current === 'whole') {
      assert.equal(run.status, 'completed');
      assert.equal((await client.responses.create(params)).output_text, 'First part. Second part.');
      continue;
    }
    assert.equal(events.at(-1)!.type, 'response.failed', current);
    assert.equal(run.status, 'failed', current);
    assert.equal(run.error.kind, 'bad_response', current);
  }
});

test("live responses: a message whose text part an upstream never adds (no content_part.added or .done, as some compatible servers stream it) reads whole: svc adds the part before its first delta and closes it before the item's done, relaying the upstream's events unchanged", async (t) => {
  const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], usage: null };
  const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello there', annotations: [] }] };
  const at = { item_id: 'msg_up', output_index: 0, content_index: 0 };
  const sent = [
    { type: 'response.created', sequence_number: 0, response },
    { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
    { type: 'response.output_text.delta', sequence_number: 2, ...at, delta: 'Hello ', logprobs: [] },
    { type: 'response.output_text.delta', sequence_number: 3, ...at, delta: 'there', logprobs: [] },
    { type: 'response.output_text.done', sequence_number: 4, ...at, text: 'Hello there', logprobs: [] },
    { type: 'response.output_item.done', sequence_number: 5, output_index: 0, item },
    { type: 'response.completed', sequence_number: 6, response: { ...response, status: 'completed', output: [item], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } } },
  ];
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, sent);
    res.end();
  });
  const { client, app, address } = await liveGateway(t, upstream);

  // Raw SSE: the upstream's events as it sent them (apart from sequence numbers), the part's added and done around them.
  const raw = await fetch(`${address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true }) });
  const frames = (await raw.text()).split('\n\n').filter(Boolean).map((frame) => JSON.parse(frame.split('\n').find((line) => line.startsWith('data: '))!.slice('data: '.length)));
  const added = { type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [] } };
  const done = { type: 'response.content_part.done', ...at, part: item.content[0] };
  const expected = [sent[0], sent[1], added, sent[2], sent[3], sent[4], done, sent[5], sent[6]];
  assert.deepEqual(
    frames,
    expected.map((event, index) => ({ ...event, sequence_number: index })),
  );
  const detail = json(await app.inject({ url: `/api/v1/runs/${raw.headers.get('x-svc-run-id')}` }));
  assert.equal(detail.run.status, 'completed');

  // The SDK's stream: every delta, and the final response's text what was streamed.
  const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input() });
  let deltas = '';
  for await (const event of stream) if (event.type === 'response.output_text.delta') deltas += event.delta;
  assert.equal(deltas, 'Hello there');
  const message = (await stream.finalResponse()).output.find((output) => output.type === 'message') as { content: Array<{ text: string }> } | undefined;
  assert.equal(message?.content[0]?.text, 'Hello there');
  // What was recorded and cached is what was streamed.
  const params = { model: 'gpt-4o-mini', input: input() };
  const { data, response: created } = await client.responses.create({ ...params, stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of data) events.push(event);
  assert.equal(json(await app.inject({ url: `/api/v1/runs/${created.headers.get('x-svc-run-id')}` })).run.status, 'completed');
  const hit = await client.responses.create(params).withResponse();
  assert.equal(hit.response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(hit.data.output_text, 'Hello there');
});

test("live responses: reasoning text, reasoning summary and refusal events naming no announced item or part are a bad_response, as text deltas are (the SDK's stream threw on them while the run completed and was cached); a whole reasoning stream reads, also with vLLM's reasoning_part events for its reasoning text part", async (t) => {
  let mode = '';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created] = upstreamEvents('unused');
    const reasoning = { id: 'rs_up', type: 'reasoning', summary: [{ type: 'summary_text', text: 'Think.' }], content: [{ type: 'reasoning_text', text: 'Because.' }] };
    const at = { item_id: 'rs_up', output_index: mode === 'text output_index' ? 1 : 0 };
    const part = mode === 'vLLM parts' ? 'response.reasoning_part' : 'response.content_part';
    const events: object[] = [created!, { type: 'response.output_item.added', output_index: 0, item: { ...reasoning, summary: [], content: [] } }];
    events.push({ type: 'response.reasoning_summary_part.added', ...at, item_id: mode === 'summary item' ? 'rs_other' : 'rs_up', summary_index: 0, part: { type: 'summary_text', text: '' } });
    events.push({ type: 'response.reasoning_summary_text.delta', ...at, summary_index: 0, delta: 'Think.' });
    events.push({ type: 'response.reasoning_summary_text.done', ...at, summary_index: 0, text: 'Think.' });
    events.push({ type: 'response.reasoning_summary_part.done', ...at, summary_index: 0, part: reasoning.summary[0] });
    if (mode !== 'no text part') events.push({ type: `${part}.added`, item_id: 'rs_up', output_index: 0, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    if (mode === 'refusal in a reasoning part') events.push({ type: 'response.refusal.delta', item_id: 'rs_up', output_index: 0, content_index: 0, delta: 'No.' });
    events.push({ type: 'response.reasoning_text.delta', ...at, content_index: 0, delta: 'Because.' });
    events.push({ type: 'response.reasoning_text.done', item_id: 'rs_up', output_index: 0, content_index: 0, text: mode === 'text differs' ? 'Because not.' : 'Because.' });
    events.push({ type: `${part}.done`, item_id: 'rs_up', output_index: 0, content_index: 0, part: reasoning.content[0] });
    events.push({ type: 'response.output_item.done', output_index: 0, item: reasoning });
    events.push({ type: 'response.completed', response: { ...created!.response, status: 'completed', output: [reasoning], usage: { input_tokens: 3, output_tokens: 4, total_tokens: 7 } } });
    writeEvents(res, events);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const current of ['text output_index', 'no text part', 'text differs', 'summary item', 'refusal in a reasoning part', 'vLLM parts', 'whole']) {
    mode = current;
    const params = { model: 'o4-mini', input: input() };
    if (current === 'whole') {
      const final = await client.responses.stream(params).finalResponse();
      assert.deepEqual((final.output[0] as { content: unknown }).content, [{ type: 'reasoning_text', text: 'Because.' }]);
      assert.equal(json(await app.inject({ url: '/api/v1/runs' })).runs[0].status, 'completed');
      continue;
    }
    const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of data) events.push(event);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    if (current === 'vLLM parts') {
      assert.equal(events.at(-1)!.type, 'response.completed');
      assert.equal(run.status, 'completed');
      continue;
    }
    assert.equal(events.at(-1)!.type, 'response.failed', current);
    assert.equal(run.status, 'failed', current);
    assert.equal(run.error.kind, 'bad_response', current);
  }
});

test('live responses: usage whose counts are not token counts is estimated, and the run completes, buffered and streamed', async (t) => {
  let usage: unknown = null;
  const upstream = await startFakeUpstream(t, (request, res) => {
    const events = upstreamEvents('An answer.');
    const completed = events.at(-1)!.response as Record<string, unknown>;
    if (request.body.stream !== true) return sendJson(res, 200, { ...completed, usage });
    startSse(res);
    writeEvents(res, [...events.slice(0, -1), { ...events.at(-1)!, response: { ...completed, usage } }]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const counts: unknown[] = [{}, { input_tokens: null, output_tokens: 3 }, { input_tokens: '9', output_tokens: 3 }, { input_tokens: -9, output_tokens: 3 }, { input_tokens: 9.5, output_tokens: 3 }];
  for (const current of counts) {
    usage = current;
    for (const stream of [false, true]) {
      const params = { model: 'gpt-4o-mini', input: input() };
      let response: Response;
      if (stream) {
        const streamed = await client.responses.create({ ...params, stream: true }).withResponse();
        for await (const event of streamed.data) assert.notEqual(event.type, 'response.failed');
        response = streamed.response;
      } else response = (await client.responses.create(params).withResponse()).response;
      const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
      const label = `${JSON.stringify(current)} stream=${stream}`;
      assert.equal(detail.run.status, 'completed', label);
      assert.ok(detail.run.usage.promptTokens > 0, label);
      if (stream) assert.ok(detail.events.some((event: { type: string }) => event.type === 'usage.estimated'), label);
    }
  }
});

test('live responses: a failure event before any other is answered with its status, not a 200 carrying response.failed', async (t) => {
  let first: 'failed' | 'error' = 'failed';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created] = upstreamEvents('unused');
    if (first === 'failed') {
      writeEvents(res, [{ type: 'response.failed', sequence_number: 1, response: { ...created!.response, status: 'failed', error: { code: 'server_error', message: 'boom' } } }]);
    } else writeEvents(res, [{ type: 'error', sequence_number: 1, code: 'server_error', message: 'overloaded' }]);
    res.end();
  });
  const { address, app, client } = await liveGateway(t, upstream);
  for (const current of ['failed', 'error'] as const) {
    first = current;
    const response = await fetch(`${address}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true }),
    });
    assert.equal(response.status, 502, current);
    const body = await response.json();
    assert.equal(validateAgainst('ErrorResponse', body), null, current);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', current);
  }
  await assert.rejects(
    client.responses.create({ model: 'gpt-4o-mini', input: input(), stream: true }),
    (error: unknown) => error instanceof OpenAI.APIError && error.status === 502,
  );
});

test('live responses: a buffered answer the upstream says failed (HTTP 200, status failed) is its failure, as the same stream is: a 502, a failed run, nothing cached, its message masked', async (t) => {
  const key = 'upstream-key-0123456789';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, { ...completed, status: 'failed', output: [], error: { code: 'server_error', message: `The model failed for key ${key}.` } });
  });
  const { app, client } = await listening(t, { CHATCOMP_API_KEY: key, CHATCOMP_BASE_URL: upstream.baseUrl });
  const params = { model: 'gpt-4o-mini', input: input('fails') };
  for (let attempt = 0; attempt < 2; attempt++) {
    await assert.rejects(client.responses.create(params), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);
  }
  assert.equal(upstream.requests.length, 2, 'each call reached the upstream: nothing was cached');
  const runs = json(await app.inject({ url: '/api/v1/runs' })).runs;
  assert.ok(runs.length > 0);
  for (const run of runs) {
    assert.equal(run.status, 'failed');
    assert.equal(run.error.kind, 'upstream_error');
    assert.match(run.error.message, /The model failed for key \[redacted\]/);
  }
});

test("live responses: an upstream's response.failed for rate_limit_exceeded before any other event is a 429 with retry-after, failed over to the next provider when there is one", async (t) => {
  const limited = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created] = upstreamEvents('unused');
    writeEvents(res, [{ type: 'response.failed', sequence_number: 1, response: { ...created!.response, status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Rate limit reached for requests' } } }]);
    res.end();
  });
  const alone = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: limited.baseUrl });
  const body = JSON.stringify({ model: 'gpt-4o-mini', input: input('limited'), stream: true });
  const refused = await fetch(`${alone.address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(refused.status, 429);
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.equal(validateAgainst('ErrorResponse', await refused.json()), null);

  const fallback = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, upstreamEvents('From the fallback'));
    res.end();
  });
  const both = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: limited.baseUrl, CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl });
  const stream = both.client.responses.stream({ model: 'gpt-4o-mini', input: input('failed over') });
  const final = await stream.finalResponse();
  const message = final.output.find((item) => item.type === 'message') as { content: Array<{ text: string }> } | undefined;
  assert.equal(message?.content[0]?.text, 'From the fallback');
  assert.equal(fallback.requests.length, 1);
});

test("live responses: an upstream's error event before any other is answered as the HTTP error its code stands for: a rate limit 429 and a server error failed over, an invalid request the upstream's 400, an unknown code a 502", async (t) => {
  const cases: Array<{ event: object; status: number; failsOver: boolean }> = [
    { event: { type: 'error', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests', param: null, sequence_number: 1 }, status: 429, failsOver: true },
    { event: { type: 'error', error: { type: 'rate_limit_error', code: null, message: 'Slow down' }, sequence_number: 1 }, status: 429, failsOver: true },
    { event: { type: 'error', code: 'server_error', message: 'The server had an error', param: null, sequence_number: 1 }, status: 502, failsOver: true },
    { event: { type: 'error', error: { type: 'server_error', code: null, message: 'overloaded' }, sequence_number: 1 }, status: 502, failsOver: true },
    { event: { type: 'error', code: 'context_length_exceeded', message: 'Your input exceeds the context window', param: 'input', sequence_number: 1 }, status: 400, failsOver: false },
    { event: { type: 'error', error: { type: 'invalid_request_error', code: 'invalid_value', message: 'Invalid value' }, sequence_number: 1 }, status: 400, failsOver: false },
    { event: { type: 'error', code: null, message: 'Something went wrong', param: null, sequence_number: 1 }, status: 502, failsOver: false },
  ];
  let current = cases[0]!;
  const primary = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, [current.event]);
    res.end();
  });
  const gateways = await withFallback(t, primary);
  for (const each of cases) {
    current = each;
    const body = JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true });
    await expectFailureAnswered(gateways, { ...each, path: '/v1/responses', body, label: JSON.stringify(each.event) });
  }
});

test("live responses: a failed response, buffered or as a stream's first event, is answered as the HTTP error its code stands for, as an error event is: a server error failed over, an invalid prompt the upstream's 400, a buffered rate limit a 429 failed over as the streamed one is", async (t) => {
  const cases = [
    { code: 'rate_limit_exceeded', status: 429, failsOver: true },
    { code: 'server_error', status: 502, failsOver: true },
    { code: 'invalid_prompt', status: 400, failsOver: false },
    { code: 'model_melted', status: 502, failsOver: false },
  ];
  let current = cases[0]!;
  const primary = await startFakeUpstream(t, (request, res) => {
    const created = upstreamEvents('unused')[0]!.response;
    const failed = { ...created, status: 'failed', error: { code: current.code, message: 'It failed.' } };
    if (!(request.body as { stream?: boolean }).stream) return sendJson(res, 200, failed);
    startSse(res);
    writeEvents(res, [{ type: 'response.failed', sequence_number: 1, response: failed }]);
    res.end();
  });
  const gateways = await withFallback(t, primary);
  for (const each of cases) {
    current = each;
    for (const stream of [false, true]) {
      const body = JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream });
      await expectFailureAnswered(gateways, { ...each, path: '/v1/responses', body, label: `${each.code} stream=${stream}` });
    }
  }
});

test("live responses: the usage a failed response reports, buffered or as a stream's first event, is the failed run's (and its attempt's), as a failed response later in a stream's is", async (t) => {
  const usage = { input_tokens: 11, output_tokens: 4, total_tokens: 15 };
  const upstream = await startFakeUpstream(t, (request, res) => {
    const failed = { ...upstreamEvents('unused')[0]!.response, status: 'failed', error: { code: 'server_error', message: 'It failed.' }, usage };
    if (!(request.body as { stream?: boolean }).stream) return sendJson(res, 200, failed);
    startSse(res);
    writeEvents(res, [{ type: 'response.failed', sequence_number: 1, response: failed }]);
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  for (const stream of [false, true]) {
    const response = await fetch(`${address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream }) });
    assert.equal(response.status, 502);
    const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
    assert.equal(detail.run.status, 'failed', `stream=${stream}`);
    assert.deepEqual(detail.run.usage, { promptTokens: 11, completionTokens: 4, totalTokens: 15 }, `stream=${stream}`);
    assert.ok(detail.run.costUsd > 0, `stream=${stream}`);
  }
});

test('live responses: a client abort mid-stream reaches the upstream and the run is finalised', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    const events = upstreamEvents('');
    writeEvents(res, events.slice(0, 3));
    await streamUntilClientCloses(res, (i) =>
      writeEvents(res, [{ type: 'response.output_text.delta', sequence_number: 100 + i, item_id: 'msg_up', output_index: 0, content_index: 0, delta: `w${i} `, logprobs: [] }]),
    );
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const controller = new AbortController();
  const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input() }, { signal: controller.signal });
  let deltas = 0;
  try {
    for await (const event of stream) {
      if (event.type === 'response.output_text.delta' && ++deltas === 3) controller.abort();
    }
  } catch {
    // the SDK reports the abort
  }
  await upstream.clientClosed();
  const [run] = await finishedRuns(app);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'aborted');
  assert.ok(run.usage.completionTokens > 0);
});

test("live responses: an upstream's error event or response.failed after response.created keeps its code (and a 4xx's masked message) on the client's response.failed and on the run", async (t) => {
  const key = 'upstream-key-0123456789';
  // `upstreamCode` is what the upstream said, recorded on the run; `code` the wire's code the client gets.
  const cases: Array<{ failure: object; code: string; message: RegExp; kind: string; upstreamCode: string }> = [
    { failure: { type: 'error', code: 'rate_limit_exceeded', message: 'Rate limit reached', param: null, sequence_number: 2 }, code: 'rate_limit_exceeded', message: /rate limiting/, kind: 'rate_limited', upstreamCode: 'rate_limit_exceeded' },
    { failure: { type: 'error', code: 'invalid_prompt', message: `Your prompt was flagged (${key})`, param: null, sequence_number: 2 }, code: 'invalid_prompt', message: /^Your prompt was flagged \(\[redacted\]\)$/, kind: 'rejected', upstreamCode: 'invalid_prompt' },
    { failure: { type: 'error', error: { type: 'rate_limit_error', code: null, message: 'Slow down' }, sequence_number: 2 }, code: 'rate_limit_exceeded', message: /rate limiting/, kind: 'rate_limited', upstreamCode: 'rate_limit_error' },
    { failure: { type: 'error', code: 'model_melted', message: 'it melted', param: null, sequence_number: 2 }, code: 'server_error', message: /^The upstream provider failed\.$/, kind: 'upstream_error', upstreamCode: 'model_melted' },
    { failure: { type: 'response.failed', sequence_number: 2, response: { ...upstreamEvents('')[0]!.response, status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Rate limit reached' } } }, code: 'rate_limit_exceeded', message: /rate limiting/, kind: 'rate_limited', upstreamCode: 'rate_limit_exceeded' },
  ];
  let current = cases[0]!;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, upstreamEvents('partial answer').slice(0, 4));
    writeEvents(res, [current.failure]);
    res.end();
  });
  const { client, app } = await listening(t, { CHATCOMP_API_KEY: key, CHATCOMP_BASE_URL: upstream.baseUrl });
  for (const each of cases) {
    current = each;
    const label = JSON.stringify(each.failure);
    const { data: stream, response } = await client.responses.create({ model: 'gpt-4o-mini', input: input(), stream: true }).withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const failed = events.at(-1)!;
    assert.equal(failed.type, 'response.failed', label);
    const error = (failed as { response: { error: { code: string; message: string } } }).response.error;
    assert.equal(error.code, each.code, label);
    assert.match(error.message, each.message, label);
    assert.equal(validateAgainst('ResponseErrorCode', error.code), null, label);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', label);
    assert.equal(run.error.kind, each.kind, label);
    assert.equal(run.error.upstreamCode, each.upstreamCode, label);
    assert.ok(!JSON.stringify(run).includes(key), label);
  }
});

test('live responses: a completed response of no output items is relayed but not cached (a hit would replay nothing)', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created, , , , , , , completed] = upstreamEvents('');
    writeEvents(res, [created!, { ...completed!, response: { ...completed!.response, output: [] } }]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: input() };
  for (const route of ['live', 'live']) {
    const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    for await (const _event of data);
    assert.equal(response.headers.get('x-svc-route'), route);
  }
  assert.equal(upstream.requests.length, 2);
});

test("live responses: an upstream's keepalive events before response.created are dropped (the SDK throws on any first event but response.created); the stream reads whole", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = upstreamEvents('After a keepalive');
    writeEvents(res, [{ type: 'keepalive', sequence_number: 1 }, { type: 'keepalive', sequence_number: 2 }, ...events]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input() });
  const types: string[] = [];
  for await (const event of stream) types.push(event.type);
  const final = await stream.finalResponse();
  const message = final.output.find((item) => item.type === 'message') as { content: Array<{ text: string }> } | undefined;
  assert.equal(message?.content[0]?.text, 'After a keepalive');
  assert.equal(types[0], 'response.created');
  assert.ok(!types.includes('keepalive' as never));
  const run = json(await app.inject({ url: '/api/v1/runs' })).runs[0];
  assert.equal(run.status, 'completed');
});

test('live responses: an upstream response.incomplete (max_output_tokens) while an item is still open ends the stream with that incomplete response, the open item closed as streamed, not with response.failed', async (t) => {
  let terminalOutput: 'given' | 'empty' = 'given';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created, added, partAdded, delta, , , , completed] = upstreamEvents('Cut off mid');
    const partial = { id: 'msg_up', type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'Cut off mid', annotations: [] }] };
    const response = { ...completed!.response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: terminalOutput === 'given' ? [partial] : [] };
    writeEvents(res, [created!, added!, partAdded!, delta!, { type: 'response.incomplete', sequence_number: 12, response }]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const current of ['given', 'empty'] as const) {
    terminalOutput = current;
    const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input(), max_output_tokens: 16 });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const last = events.at(-1)!;
    assert.equal(last.type, 'response.incomplete', current);
    const terminal = (last as { response: { status: string; incomplete_details: unknown; output: Array<{ id: string; status: string; content: Array<{ text: string }> }> } }).response;
    assert.equal(terminal.status, 'incomplete', current);
    assert.deepEqual(terminal.incomplete_details, { reason: 'max_output_tokens' }, current);
    assert.equal(terminal.output.length, 1, current);
    assert.equal(terminal.output[0]!.id, 'msg_up', current);
    assert.equal(terminal.output[0]!.status, 'incomplete', current);
    assert.equal(terminal.output[0]!.content[0]!.text, 'Cut off mid', current);
    const run = json(await app.inject({ url: '/api/v1/runs' })).runs[0];
    assert.equal(run.status, 'completed', current);
  }
});

test('live responses: an item left open by an upstream response.incomplete is closed on the client stream by its done events (text, part, item) before response.incomplete, numbered in order and valid', async (t) => {
  // 'open': cut off mid-text; 'text-done': its output_text.done came, its content_part.done and output_item.done not.
  let cut: 'open' | 'text-done' = 'open';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [created, added, partAdded, delta, textDone, , , completed] = upstreamEvents('Cut off mid');
    const response = { ...completed!.response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [] };
    writeEvents(res, [created!, added!, partAdded!, delta!, ...(cut === 'text-done' ? [textDone!] : []), { type: 'response.incomplete', sequence_number: 12, response }]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  for (const current of ['open', 'text-done'] as const) {
    cut = current;
    const stream = client.responses.stream({ model: 'gpt-4o-mini', input: input(), max_output_tokens: 16 });
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    assert.deepEqual(
      events.map((event) => event.type),
      ['response.created', 'response.output_item.added', 'response.content_part.added', 'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete'],
      current,
    );
    assert.deepEqual(
      events.map((event) => event.sequence_number),
      events.map((_, index) => index),
      current,
    );
    const [textDone, partDone, itemDone, incomplete] = events.slice(-4);
    // The closing events are svc's (the fake upstream's own events carry a minimal Response).
    for (const event of [textDone, partDone, itemDone]) assert.equal(validateAgainst('ResponseStreamEvent', event), null, `${current} ${event.type}`);
    assert.deepEqual([textDone.item_id, textDone.output_index, textDone.content_index, textDone.text], ['msg_up', 0, 0, 'Cut off mid'], current);
    assert.deepEqual([partDone.item_id, partDone.content_index, partDone.part], ['msg_up', 0, { type: 'output_text', text: 'Cut off mid', annotations: [], logprobs: [] }], current);
    assert.equal(itemDone.output_index, 0, current);
    assert.deepEqual(itemDone.item, incomplete.response.output[0], current);
    assert.equal(itemDone.item.status, 'incomplete', current);
  }
});

test("live responses: a failure after only keepalives (an SSE comment, OpenAI's keepalive event) is answered as the HTTP error its code stands for, as one that is the very first bytes: nothing had gone to the client", async (t) => {
  const [created] = upstreamEvents('unused');
  const failures: Array<{ event: object; status: number; failsOver: boolean }> = [
    { event: { type: 'response.failed', sequence_number: 3, response: { ...created!.response, status: 'failed', error: { code: 'rate_limit_exceeded', message: 'Slow down' } } }, status: 429, failsOver: true },
    { event: { type: 'response.failed', sequence_number: 3, response: { ...created!.response, status: 'failed', error: { code: 'invalid_prompt', message: 'No' } } }, status: 400, failsOver: false },
    { event: { type: 'error', code: 'server_error', message: 'overloaded', param: null, sequence_number: 3 }, status: 502, failsOver: true },
  ];
  const preambles = { comment: ': keep-alive\n\n', keepalive: 'event: keepalive\ndata: {"type":"keepalive","sequence_number":1}\n\n', both: ': ping\n\nevent: keepalive\ndata: {"type":"keepalive","sequence_number":1}\n\nevent: keepalive\ndata: {"type":"keepalive","sequence_number":2}\n\n' };
  let current = { preamble: preambles.comment, event: failures[0]!.event };
  const primary = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.write(current.preamble);
    if (current.event) writeEvents(res, [current.event]);
    res.end();
  });
  const gateways = await withFallback(t, primary);
  for (const [name, preamble] of Object.entries(preambles)) {
    for (const failure of failures) {
      current = { preamble, event: failure.event };
      const body = JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true });
      await expectFailureAnswered(gateways, { ...failure, path: '/v1/responses', body, label: `${name} ${JSON.stringify(failure.event)}` });
    }
  }
  // Keepalives and then the end, no terminal event: a truncated answer, still uncommitted (svc's 502, failed over).
  current = { preamble: preambles.both, event: null as never };
  await expectFailureAnswered(gateways, { status: 502, failsOver: true, path: '/v1/responses', body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), stream: true }), label: 'keepalives alone' });
  // The SDK's create rejects with the status instead of handing back a stream that fails.
  current = { preamble: preambles.keepalive, event: failures[1]!.event };
  await assert.rejects(
    gateways.alone.client.responses.create({ model: 'gpt-4o-mini', input: input(), stream: true }),
    (error: unknown) => error instanceof OpenAI.APIError && error.status === 400,
  );
});

test('live responses: a function call cut off mid-arguments by response.incomplete (max_output_tokens) is closed incomplete with the arguments as streamed and its done events, not refused as an invalid tool call; buffered too', async (t) => {
  let terminalOutput: 'given' | 'empty' = 'given';
  const args = '{"city":"Os';
  const call = { id: 'fc_up', type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '', status: 'in_progress' };
  const [created, , , , , , , completed] = upstreamEvents('unused');
  const incomplete = (output: object[]) => ({ ...completed!.response, status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output });
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (!(request.body as { stream?: boolean }).stream) return sendJson(res, 200, incomplete([{ ...call, arguments: args, status: 'incomplete' }]));
    startSse(res);
    writeEvents(res, [
      created!,
      { type: 'response.output_item.added', sequence_number: 6, output_index: 0, item: call },
      { type: 'response.function_call_arguments.delta', sequence_number: 7, item_id: 'fc_up', output_index: 0, delta: args },
      { type: 'response.incomplete', sequence_number: 8, response: incomplete(terminalOutput === 'given' ? [{ ...call, arguments: args, status: 'incomplete' }] : []) },
    ]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: input(), tools: [WEATHER], max_output_tokens: 16 };
  for (const current of ['given', 'empty'] as const) {
    terminalOutput = current;
    const stream = client.responses.stream(params);
    const events: any[] = [];
    for await (const event of stream) events.push(event);
    assert.deepEqual(
      events.map((event) => event.type),
      ['response.created', 'response.output_item.added', 'response.function_call_arguments.delta', 'response.function_call_arguments.done', 'response.output_item.done', 'response.incomplete'],
      current,
    );
    const [argsDone, itemDone] = events.slice(-3);
    for (const event of [argsDone, itemDone]) assert.equal(validateAgainst('ResponseStreamEvent', event), null, `${current} ${event.type}`);
    assert.equal(argsDone.arguments, args, current);
    // The terminal event's response (the SDK's finalResponse is its own snapshot but for a response.completed).
    const terminal = events.at(-1).response;
    assert.equal(terminal.status, 'incomplete', current);
    assert.deepEqual(terminal.output.map((item: any) => [item.id, item.status, item.arguments]), [['fc_up', 'incomplete', args]], current);
    assert.deepEqual(itemDone.item, terminal.output[0], current);
    const run = json(await app.inject({ url: '/api/v1/runs' })).runs[0];
    assert.equal(run.status, 'completed', current);
  }
  const buffered = await client.responses.create({ ...params, input: input() });
  assert.equal(buffered.status, 'incomplete');
  assert.deepEqual(buffered.output.map((item: any) => [item.id, item.status, item.arguments]), [['fc_up', 'incomplete', args]]);
});

test("live responses: a streamed item the terminal output leaves out is filled in though another item's id is in it twice; each streamed item is in the final output once", async (t) => {
  const [created, added, partAdded, delta, textDone, partDone, itemDone, completed] = upstreamEvents('First');
  const second = { id: 'msg_two', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Second', annotations: [] }] };
  const at = { item_id: 'msg_two', output_index: 1, content_index: 0 };
  const first = (itemDone as { item: { id: string } }).item;
  const events = [
    created!, added!, partAdded!, delta!, textDone!, partDone!, itemDone!,
    { type: 'response.output_item.added', sequence_number: 20, output_index: 1, item: { ...second, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', sequence_number: 21, ...at, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', sequence_number: 22, ...at, delta: 'Second', logprobs: [] },
    { type: 'response.output_text.done', sequence_number: 23, ...at, text: 'Second', logprobs: [] },
    { type: 'response.content_part.done', sequence_number: 24, ...at, part: second.content[0] },
    { type: 'response.output_item.done', sequence_number: 25, output_index: 1, item: second },
  ];
  // The second item missing behind the first given twice; both given, the first again after them.
  const terminals = { masked: [first, first], repeated: [first, second, first] };
  let terminal: object[] = terminals.masked;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, [...events, { ...completed!, sequence_number: 26, response: { ...completed!.response, output: terminal } }]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  for (const [name, output] of Object.entries(terminals)) {
    terminal = output;
    const params = { model: 'gpt-4o-mini', input: input() };
    const stream = client.responses.stream(params);
    for await (const _event of stream);
    const final = await stream.finalResponse();
    assert.deepEqual(final.output.map((item) => item.id), ['msg_up', 'msg_two'], name);
    assert.deepEqual(final.output.map((item: any) => item.content[0].text), ['First', 'Second'], name);
    // What was cached is what the client had.
    const { data, response } = await client.responses.create(params).withResponse();
    assert.equal(response.headers.get('x-svc-route'), 'exact_cache', name);
    assert.deepEqual(data.output.map((item) => item.id), ['msg_up', 'msg_two'], name);
  }
});

test("tool search: a catalogue of 2,000 defer_loading function tools beside a tool_search tool reaches the upstream as sent, a deferred tool's call is checked against its schema, and the mock calls only tools not deferred; more than 128 tools not deferred, or 10,000 in all, are still a 400", async (t) => {
  const deferred = Array.from({ length: 2_000 }, (_, i) => ({
    type: 'function' as const,
    name: `crm_tool_${i}`,
    description: `CRM operation number ${i}`,
    parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false },
    strict: true,
    defer_loading: true,
  }));
  const search = { type: 'tool_search' };
  const tools = [search, ...deferred, WEATHER];
  let args = '{"id":42}';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, {
      ...completed,
      output: [
        { type: 'tool_search_call', id: 'tsc_1', call_id: null, execution: 'server', arguments: { paths: ['crm_tool_42'] }, status: 'completed' },
        { type: 'tool_search_output', id: 'tso_1', call_id: null, execution: 'server', tools: [deferred[42]], status: 'completed' },
        { type: 'function_call', id: 'fc_1', call_id: 'call_crm', name: 'crm_tool_42', arguments: args, status: 'completed' },
      ],
    });
  });
  const { client, address } = await liveGateway(t, upstream);
  const request = () => ({ model: 'gpt-4o-mini', input: input('find the CRM record'), tools }) as never;
  const answer = await client.responses.create(request());
  assert.deepEqual(answer.output.map((item) => item.type), ['tool_search_call', 'tool_search_output', 'function_call']);
  assert.deepEqual((upstream.requests[0]!.body as { tools: unknown }).tools, tools);
  // A deferred tool's call is checked as any other: arguments off its schema are refused.
  args = '{"id":"forty-two"}';
  await assert.rejects(client.responses.create(request()), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);

  // The mock calls a tool the model has in context, not a deferred one listed first.
  const mock = await listening(t);
  const mocked = await mock.client.responses.create({ model: 'gpt-4o-mini', input: input(), tools, tool_choice: 'required' } as never);
  assert.deepEqual(mocked.output.filter((item) => item.type === 'function_call').map((item) => (item as { name: string }).name), ['get_weather']);
  assert.equal(validateAgainst('Response', mocked), null);

  // The CPU bounds stay: 129 tools not deferred, or more than 10,000 in all, are a 400 on tools with no upstream call.
  const eager = deferred.slice(0, 129).map(({ defer_loading: _, ...tool }) => tool);
  const many = Array.from({ length: 10_001 }, (_, i) => ({ ...deferred[0]!, name: `t${i}` }));
  const before = upstream.requests.length;
  for (const [label, list] of [['129 not deferred', eager], ['10,001 tools', [WEATHER, ...many]]] as const) {
    const response = await fetch(`${address}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), tools: list }),
    });
    assert.equal(response.status, 400, label);
    const body = (await response.json()) as { error: { type: string; message: string; param: string | null } };
    assert.equal(validateAgainst('ErrorResponse', body), null, label);
    assert.equal(body.error.type, 'invalid_request_error', label);
    assert.match(body.error.message, /tools/, label);
  }
  assert.equal(upstream.requests.length, before);
});

test("client-executed tool search: a function or custom tool the client loaded in a tool_search_output input item is declared, so the model's call of it is relayed (it was refused as undeclared, a 502) and checked against the loaded schema; a loaded tool also in tools is no duplicate", async (t) => {
  let call: Record<string, unknown> = { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'crm_lookup', arguments: '{"id":1}', status: 'completed' };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, { ...completed, output: [call] });
  });
  const { client } = await liveGateway(t, upstream);
  const loaded = [
    { type: 'function', name: 'crm_lookup', parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] }, strict: false },
    { type: 'custom', name: 'crm_query' },
    WEATHER,
  ];
  const request = () =>
    ({
      model: 'gpt-4o-mini',
      tools: [{ type: 'tool_search', execution: 'client' }, WEATHER],
      input: [
        { role: 'user', content: input('look up CRM record 1') },
        { type: 'tool_search_call', call_id: 'ts_1', execution: 'client', arguments: { query: 'crm' }, status: 'completed' },
        { type: 'tool_search_output', call_id: 'ts_1', execution: 'client', status: 'completed', tools: loaded },
      ],
    }) as never;
  const answer = await client.responses.create(request());
  assert.deepEqual(answer.output.map((item) => (item as { name: string }).name), ['crm_lookup']);
  call = { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', name: 'crm_query', input: 'SELECT 1' };
  assert.deepEqual((await client.responses.create(request())).output.map((item) => (item as { name: string }).name), ['crm_query']);
  // The loaded schema is the authority for its calls, as a declared one is.
  call = { type: 'function_call', id: 'fc_2', call_id: 'call_3', name: 'crm_lookup', arguments: '{"id":"one"}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);
  // A tool no search loaded is still undeclared.
  call = { type: 'function_call', id: 'fc_3', call_id: 'call_4', name: 'crm_delete', arguments: '{}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);
});

test("tool search with namespaces: a namespace of function and custom tools (deferred or not) is declared, not refused as a hosted tool type; a call carrying its namespace is checked against that namespace's tool; a namespace's tools count toward the tools bounds", async (t) => {
  let call: Record<string, unknown> = { type: 'function_call', id: 'fc_1', call_id: 'call_1', namespace: 'crm', name: 'get_customer', arguments: '{"id":7}', status: 'completed' };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, { ...completed, output: [call] });
  });
  const { client, address } = await liveGateway(t, upstream);
  const idSchema = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false };
  const crm = {
    type: 'namespace',
    name: 'crm',
    description: 'Customer records',
    tools: [
      { type: 'function', name: 'get_customer', parameters: idSchema, strict: true, defer_loading: true },
      { type: 'function', name: 'list_customers', parameters: { type: 'object' }, strict: false },
      { type: 'custom', name: 'query', defer_loading: true },
    ],
  };
  // get_weather in a second namespace: a name in two namespaces is two tools.
  const billing = { type: 'namespace', name: 'billing', description: 'Invoices', tools: [{ type: 'function', name: 'get_customer', parameters: { type: 'object', properties: { email: { type: 'string' } }, required: ['email'] }, defer_loading: true }] };
  const tools = [{ type: 'tool_search' }, crm, billing, WEATHER];
  const request = () => ({ model: 'gpt-4o-mini', input: input('customer 7'), tools }) as never;
  const names = async () => (await client.responses.create(request())).output.map((item) => (item as { name: string }).name);
  assert.deepEqual(await names(), ['get_customer']);
  assert.deepEqual((upstream.requests[0]!.body as { tools: unknown }).tools, tools);
  call = { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', namespace: 'crm', name: 'query', input: 'all' };
  assert.deepEqual(await names(), ['query']);
  // Checked against its own namespace's schema: billing.get_customer wants an email, crm.get_customer an integer id.
  call = { type: 'function_call', id: 'fc_2', call_id: 'call_3', namespace: 'billing', name: 'get_customer', arguments: '{"email":"a@b.c"}', status: 'completed' };
  assert.deepEqual(await names(), ['get_customer']);
  call = { type: 'function_call', id: 'fc_3', call_id: 'call_4', namespace: 'crm', name: 'get_customer', arguments: '{"email":"a@b.c"}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);
  // A namespaced tool called without its namespace is no declared tool.
  call = { type: 'function_call', id: 'fc_4', call_id: 'call_5', name: 'list_customers', arguments: '{}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), (error: unknown) => error instanceof OpenAI.APIError && error.status === 502);

  // A namespace's tools count: 129 not deferred inside one namespace are past the bound, a 400 with no upstream call.
  const before = upstream.requests.length;
  const eager = { ...crm, tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', name: `f${i}`, parameters: { type: 'object' } })) };
  const response = await fetch(`${address}/v1/responses`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', input: input(), tools: [eager] }) });
  assert.equal(response.status, 400);
  assert.match(((await response.json()) as { error: { message: string } }).error.message, /tools/);
  assert.equal(upstream.requests.length, before);
});

test("client-executed tool search loading a namespace: the namespace a tool_search_output input item returns declares its tools under its name, so the model's call carrying that namespace is relayed (it was refused as undeclared, a 502) and checked against the loaded schema", async (t) => {
  let call: Record<string, unknown> = { type: 'function_call', id: 'fc_1', call_id: 'call_1', namespace: 'crm', name: 'get_customer', arguments: '{"id":7}', status: 'completed' };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, { ...completed, output: [call] });
  });
  const { client } = await liveGateway(t, upstream);
  const loaded = {
    type: 'namespace',
    name: 'crm',
    description: 'Customer records',
    tools: [
      { type: 'function', name: 'get_customer', parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] }, strict: false },
      { type: 'custom', name: 'query' },
    ],
  };
  const request = () =>
    ({
      model: 'gpt-4o-mini',
      tools: [{ type: 'tool_search', execution: 'client' }, WEATHER],
      input: [
        { role: 'user', content: input('customer 7') },
        { type: 'tool_search_call', call_id: 'ts_1', execution: 'client', arguments: { query: 'crm' }, status: 'completed' },
        { type: 'tool_search_output', call_id: 'ts_1', execution: 'client', status: 'completed', tools: [loaded] },
      ],
    }) as never;
  const names = async () => (await client.responses.create(request())).output.map((item) => (item as { name: string }).name);
  assert.deepEqual(await names(), ['get_customer']);
  call = { type: 'custom_tool_call', id: 'ctc_1', call_id: 'call_2', namespace: 'crm', name: 'query', input: 'all' };
  assert.deepEqual(await names(), ['query']);
  const refused = (error: unknown) => error instanceof OpenAI.APIError && error.status === 502;
  // The loaded schema is the authority for its calls.
  call = { type: 'function_call', id: 'fc_2', call_id: 'call_3', namespace: 'crm', name: 'get_customer', arguments: '{"id":"seven"}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), refused);
  // Loaded in a namespace, the tool is not declared without it, nor under another namespace.
  call = { type: 'function_call', id: 'fc_3', call_id: 'call_4', name: 'get_customer', arguments: '{"id":7}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), refused);
  call = { type: 'function_call', id: 'fc_4', call_id: 'call_5', namespace: 'billing', name: 'get_customer', arguments: '{"id":7}', status: 'completed' };
  await assert.rejects(client.responses.create(request()), refused);
});

test("tool_choice naming a namespace's tool: OpenAI's ToolChoiceFunction has a name only, so a function or custom choice (or allowed_tools entry) naming a tool that exactly one namespace declares chooses it and reaches the upstream as sent (it was a 400 'not a declared tool'); a name two namespaces declare is an ambiguous 400 with no upstream call", async (t) => {
  const call = { type: 'function_call', id: 'fc_1', call_id: 'call_1', namespace: 'crm', name: 'get_customer', arguments: '{"id":7}', status: 'completed' };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const completed = upstreamEvents('unused').at(-1)!.response as Record<string, unknown>;
    sendJson(res, 200, { ...completed, output: [call] });
  });
  const { client } = await liveGateway(t, upstream);
  const idSchema = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] };
  const crm = {
    type: 'namespace',
    name: 'crm',
    description: 'Customer records',
    tools: [
      { type: 'function', name: 'get_customer', parameters: idSchema, defer_loading: true },
      { type: 'function', name: 'list_customers', parameters: { type: 'object' } },
      { type: 'custom', name: 'query' },
    ],
  };
  const billing = { type: 'namespace', name: 'billing', description: 'Invoices', tools: [{ type: 'function', name: 'list_customers', parameters: { type: 'object' } }] };
  const tools = [{ type: 'tool_search' }, crm, billing, WEATHER];
  const request = (tool_choice: unknown) => ({ model: 'gpt-4o-mini', input: input('customer 7'), tools, tool_choice }) as never;
  for (const choice of [
    { type: 'function', name: 'get_customer' },
    { type: 'custom', name: 'query' },
    { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_customer' }, { type: 'function', name: 'get_weather' }] },
  ]) {
    const answer = await client.responses.create(request(choice));
    assert.deepEqual(answer.output.map((item) => (item as { name: string }).name), ['get_customer']);
    assert.deepEqual((upstream.requests.at(-1)!.body as { tool_choice: unknown }).tool_choice, choice);
  }
  const before = upstream.requests.length;
  for (const choice of [{ type: 'function', name: 'list_customers' }, { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'list_customers' }] }]) {
    await assert.rejects(client.responses.create(request(choice)), (error: unknown) => error instanceof OpenAI.BadRequestError && /more than one namespace/.test(error.message));
  }
  await assert.rejects(client.responses.create(request({ type: 'function', name: 'delete_customer' })), (error: unknown) => error instanceof OpenAI.BadRequestError && /not a declared tool/.test(error.message));
  assert.equal(upstream.requests.length, before);
});

test("tool_choice of the wrong kind: a function choice (or allowed_tools entry) naming a custom tool, or a custom one naming a function tool, is a 400 naming the tool's kind, no run (the mock called the tool and the request went upstream); each of its own kind is honoured", async (t) => {
  const { client, app } = await listening(t);
  const query = { type: 'custom' as const, name: 'query' };
  const request = (tool_choice: unknown) => ({ model: 'gpt-4o-mini', input: input('choose'), tools: [WEATHER, query], tool_choice }) as never;
  for (const [choice, kind] of [
    [{ type: 'function', name: 'query' }, 'custom'],
    [{ type: 'custom', name: 'get_weather' }, 'function'],
    [{ type: 'allowed_tools', mode: 'required', tools: [{ type: 'custom', name: 'get_weather' }] }, 'function'],
  ] as const) {
    await assert.rejects(
      client.responses.create(request(choice)),
      (error: unknown) => error instanceof OpenAI.BadRequestError && new RegExp(`declared as a ${kind} tool`).test(error.message),
      JSON.stringify(choice),
    );
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  const custom = await client.responses.create(request({ type: 'custom', name: 'query' }));
  assert.deepEqual(custom.output.map((item) => [item.type, (item as { name: string }).name]), [['custom_tool_call', 'query']]);
  const fn = await client.responses.create(request({ type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }] }));
  assert.deepEqual(fn.output.map((item) => [item.type, (item as { name: string }).name]), [['function_call', 'get_weather']]);
});

test("tool_choice allowed_tools needs its mode ('auto' or 'required') and at least one tool, as the OpenAPI ToolChoiceAllowed does: a mode left out or of another value, or an empty list, is a 400 on it, no run (they were answered, the mock taking any mode for auto, and went upstream)", async (t) => {
  const { app } = await build(t);
  const allowed = (fields: Record<string, unknown>) => ({ model: 'gpt-4o', input: 'x', tools: [WEATHER], tool_choice: { type: 'allowed_tools', ...fields } });
  const named = [{ type: 'function', name: 'get_weather' }];
  for (const [payload, param] of [
    [allowed({ mode: 'bogus', tools: named }), 'tool_choice.mode'],
    [allowed({ tools: named }), 'tool_choice.mode'],
    [allowed({ mode: 'required', tools: [] }), 'tool_choice.tools'],
  ] as const) {
    const response = await app.inject({ method: 'POST', url: '/v1/responses', payload });
    assert.equal(response.statusCode, 400, JSON.stringify(payload.tool_choice));
    assert.equal(json(response).error.param, param);
    assert.equal(validateAgainst('ErrorResponse', json(response)), null);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  for (const mode of ['auto', 'required']) assert.equal((await app.inject({ method: 'POST', url: '/v1/responses', payload: allowed({ mode, tools: named }) })).statusCode, 200, mode);
});

test("the mock honours a tool_choice of a namespace's tool or a deferred one, which it otherwise leaves alone: it calls the chosen tool (a namespace's with its namespace), buffered and streamed; it refused the request svc had accepted with a 400 'not a declared tool'", async (t) => {
  const { client } = await listening(t);
  const crm = {
    type: 'namespace',
    name: 'crm',
    description: 'Customer records',
    tools: [
      { type: 'function', name: 'get_customer', parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false } },
      { type: 'custom', name: 'query' },
    ],
  };
  const lazy = { ...WEATHER, name: 'get_forecast', defer_loading: true };
  const tools = [{ type: 'tool_search' }, crm, lazy, WEATHER];
  const request = (tool_choice: unknown) => ({ model: 'gpt-4o-mini', input: input('choose'), tools, tool_choice }) as never;
  const calls = (output: ReadonlyArray<unknown>) => output.map((item) => {
    const { type, namespace, name } = item as { type: string; namespace?: string; name: string };
    return [type, namespace ?? null, name];
  });
  for (const [choice, expected] of [
    [{ type: 'function', name: 'get_customer' }, [['function_call', 'crm', 'get_customer']]],
    [{ type: 'custom', name: 'query' }, [['custom_tool_call', 'crm', 'query']]],
    [{ type: 'function', name: 'get_forecast' }, [['function_call', null, 'get_forecast']]],
    [{ type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_customer' }] }, [['function_call', 'crm', 'get_customer']]],
  ] as const) {
    const buffered = await client.responses.create(request(choice));
    assert.deepEqual(calls(buffered.output), expected, JSON.stringify(choice));
    assert.equal(validateAgainst('Response', buffered), null);
    const stream = client.responses.stream(request(choice));
    for await (const event of stream) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
    assert.deepEqual(calls((await stream.finalResponse()).output), expected, JSON.stringify(choice));
  }
  const call = (await client.responses.create(request({ type: 'function', name: 'get_customer' }))).output[0] as { arguments: string };
  assert.equal(typeof JSON.parse(call.arguments).id, 'number');
  // Not chosen, they stay uncalled: the mock calls the tool the model has in context.
  assert.deepEqual(calls((await client.responses.create(request('required'))).output), [['function_call', null, 'get_weather']]);
});

test("tool_choice 'required' without tools is a 400 on tool_choice, no run, as on the chat wire (the mock answered it with text, a required call silently dropped); with a tool, or 'auto' or 'none' without one, it is answered", async (t) => {
  const { app } = await build(t);
  for (const tools of [undefined, []]) {
    const response = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o', input: 'x', tool_choice: 'required', ...(tools ? { tools } : {}) } });
    assert.equal(response.statusCode, 400, JSON.stringify(tools));
    assert.equal(json(response).error.param, 'tool_choice');
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  for (const payload of [{ tool_choice: 'required', tools: [WEATHER] }, { tool_choice: 'auto' }, { tool_choice: 'none' }]) {
    assert.equal((await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o', input: input(), ...payload } })).statusCode, 200, JSON.stringify(payload));
  }
});

test("an input message item's role is user, assistant, system or developer and its content a string or a list of typed parts: anything else is a 400 on it, no run (a null part was the mock's crash, a 502 and a failed run; a number or an unknown role was answered)", async (t) => {
  const { app } = await build(t);
  for (const [item, param] of [
    [{ role: 'user', content: [null] }, 'input[0].content'],
    [{ role: 'user', content: [{ type: 'input_text', text: 'a' }, 'b'] }, 'input[0].content'],
    [{ role: 'user', content: 5 }, 'input[0].content'],
    [{ role: 'user' }, 'input[0].content'],
    [{ role: 'wizard', content: 'hi' }, 'input[0].role'],
  ] as const) {
    const response = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o', input: [item] } });
    assert.equal(response.statusCode, 400, JSON.stringify(item));
    assert.equal(json(response).error.param, param, JSON.stringify(item));
    assert.equal(validateAgainst('ErrorResponse', json(response)), null);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  const conversation = [
    { role: 'developer', content: 'be brief' },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: input('describe') }, { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' }] },
    { type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'A dot.', annotations: [] }] },
    { type: 'function_call', call_id: 'c1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'c1', output: 'sunny' },
    { role: 'system', content: 'and polite' },
  ];
  const answered = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o', input: conversation, tools: [WEATHER] } });
  assert.equal(answered.statusCode, 200, answered.body);
});

test("tool_choice naming a namespace's tool by svc's internal namespace.name key ('crm.get_customer') is a 400 on tool_choice saying a namespace's tool is chosen by its own name, no run (it was answered and went upstream as is, a name no OpenAPI ToolChoiceFunction has); by its own name it is honoured", async (t) => {
  const { client, app } = await listening(t);
  const crm = {
    type: 'namespace',
    name: 'crm',
    description: 'Customer records',
    tools: [{ type: 'function', name: 'get_customer', parameters: { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] } }, { type: 'custom', name: 'query' }],
  };
  const request = (tool_choice: unknown) => ({ model: 'gpt-4o-mini', input: input('customer 7'), tools: [{ type: 'tool_search' }, crm, WEATHER], tool_choice }) as never;
  for (const choice of [
    { type: 'function', name: 'crm.get_customer' },
    { type: 'custom', name: 'crm.query' },
    { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'get_weather' }, { type: 'function', name: 'crm.get_customer' }] },
  ]) {
    await assert.rejects(
      client.responses.create(request(choice)),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, JSON.stringify(choice));
        assert.match(error.message, /chosen by its own name/);
        assert.match(error.param ?? '', /^tool_choice/);
        return true;
      },
      JSON.stringify(choice),
    );
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  const answer = await client.responses.create(request({ type: 'function', name: 'get_customer' }));
  assert.deepEqual(answer.output.map((item) => [(item as { namespace?: string }).namespace, (item as { name: string }).name]), [['crm', 'get_customer']]);
});

test("a tool_choice with no name (the chat wire's {type: 'function', function: {name}}) is a 400 saying the choice needs a name and showing the responses form, no run (it said names \"undefined\", which is not a declared tool)", async (t) => {
  const { client, app } = await listening(t);
  for (const choice of [
    { type: 'function', function: { name: 'get_weather' } },
    { type: 'custom' },
    { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', function: { name: 'get_weather' } }] },
  ]) {
    await assert.rejects(
      client.responses.create({ model: 'gpt-4o-mini', input: input('weather'), tools: [WEATHER, { type: 'custom', name: 'query' }], tool_choice: choice } as never),
      (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, JSON.stringify(choice));
        assert.doesNotMatch(error.message, /undefined/);
        assert.match(error.message, /needs a name/);
        assert.match(error.message, /"name": /);
        return true;
      },
      JSON.stringify(choice),
    );
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
});

test("the mock reads a past function_call item of the input with its namespace: two conversations whose earlier call differs only in its namespace (crm.get_customer, billing.get_customer) are two conversations, answered apart, the namespace counted among the input tokens (it was dropped: both got one answer, and the count was that of a call without it)", async (t) => {
  const { client } = await listening(t);
  const namespace = (name: string) => ({ type: 'namespace', name, description: name, tools: [{ type: 'function', name: 'get_customer', parameters: { type: 'object' } }] });
  const question = input('customer 7');
  const answer = (called?: string) =>
    client.responses.create({
      model: 'gpt-4o-mini',
      tools: [{ type: 'tool_search' }, namespace('crm'), namespace('billing')],
      input: [
        { role: 'user', content: question },
        { type: 'function_call', call_id: 'call_1', ...(called ? { namespace: called } : {}), name: 'get_customer', arguments: '{"id":7}' },
        { type: 'function_call_output', call_id: 'call_1', output: '{"name":"Ada"}' },
      ],
    } as never);
  const [crm, billing, bare] = [await answer('crm'), await answer('billing'), await answer()];
  assert.notEqual(crm.output_text, billing.output_text);
  assert.ok(crm.usage!.input_tokens > bare.usage!.input_tokens, `${crm.usage!.input_tokens} vs ${bare.usage!.input_tokens} without the namespace`);
});

test("the mock reads a past custom_tool_call item of the input as it reads a function_call: two conversations whose earlier custom call differs only in its input are two conversations, answered apart, the input counted among the input tokens (the item was dropped, its custom_tool_call_output left answering no call: both got one answer and one count)", async (t) => {
  const { client } = await listening(t);
  const question = input('run the query');
  const answer = (sql: string) =>
    client.responses.create({
      model: 'gpt-4o-mini',
      tools: [{ type: 'custom', name: 'sql', description: 'Runs SQL' }],
      input: [
        { role: 'user', content: question },
        { type: 'custom_tool_call', call_id: 'call_1', name: 'sql', input: sql },
        { type: 'custom_tool_call_output', call_id: 'call_1', output: '1 row' },
      ],
    });
  const [short, long] = [await answer('SELECT 1'), await answer('SELECT name, email, created_at FROM customers WHERE id = 7 ORDER BY created_at DESC')];
  assert.equal(short.status, 'completed');
  assert.notEqual(short.output_text, long.output_text);
  assert.ok(long.usage!.input_tokens > short.usage!.input_tokens, `${long.usage!.input_tokens} vs ${short.usage!.input_tokens} with a shorter input`);
});

test("the mock's reasoning, summarised when reasoning.summary asks, is billed as the provider bills reasoning: its tokens are output tokens and the output's reasoning_tokens, buffered and streamed", async (t) => {
  const { client } = await listening(t);
  const asked = input('reason it out');
  const plain = await client.responses.create({ model: 'gpt-5', input: asked });
  const request = { model: 'gpt-5', input: asked, reasoning: { effort: 'low' as const, summary: 'auto' as const } };
  for (const reasoned of [await client.responses.create(request), await client.responses.stream(request).finalResponse()]) {
    assert.equal(reasoned.output[0]!.type, 'reasoning');
    const usage = reasoned.usage!;
    assert.ok(usage.output_tokens_details.reasoning_tokens > 0, JSON.stringify(usage));
    assert.equal(usage.output_tokens, plain.usage!.output_tokens + usage.output_tokens_details.reasoning_tokens);
    assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
  }
});

test("the mock's message cut off by max_output_tokens is an incomplete item in the incomplete response, buffered and streamed (its output_item.done and the response.incomplete's output), as an upstream's is and as svc closes a live one; a whole answer's message stays completed (the official client)", async (t) => {
  const { client } = await listening(t);
  const request = { model: 'gpt-4o-mini', input: input('tell me a long story about many things, please'), max_output_tokens: 16 };
  const messageOf = (response: OpenAI.Responses.Response) => response.output.find((item) => item.type === 'message')!;
  const buffered = await client.responses.create(request);
  assert.equal(buffered.status, 'incomplete');
  assert.equal(messageOf(buffered).status, 'incomplete', 'the truncated message was completed');
  const events: ResponseStreamEvent[] = [];
  for await (const event of await client.responses.create({ ...request, input: input('tell me a long story about many things, please'), stream: true })) events.push(event);
  const terminal = events.at(-1)!;
  assert.equal(terminal.type, 'response.incomplete');
  assert.equal(terminal.type === 'response.incomplete' && messageOf(terminal.response).status, 'incomplete');
  const done = events.find((event) => event.type === 'response.output_item.done');
  assert.equal(done?.type === 'response.output_item.done' && done.item.type === 'message' && done.item.status, 'incomplete');
  for (const event of events) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
  const whole = await client.responses.create({ ...request, input: input('hi'), max_output_tokens: 1000 });
  assert.equal(whole.status, 'completed');
  assert.equal(messageOf(whole).status, 'completed');
});

test('the mock has no log probabilities to give: include message.output_text.logprobs is a 400 naming it, buffered and streamed, never an output text with logprobs: [] (the official client)', async (t) => {
  const { client } = await listening(t);
  for (const stream of [false, true]) {
    const error = await client.responses.create({ model: 'gpt-4o-mini', input: input(), include: ['message.output_text.logprobs'], stream }).then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.BadRequestError, `stream: ${stream}: answered instead of refused`);
    assert.match(error.message, /message\.output_text\.logprobs/);
    assert.equal(error.param, 'include');
  }
  // Other include entries are the mock's to answer.
  const answered = await client.responses.create({ model: 'gpt-4o-mini', input: input(), include: ['reasoning.encrypted_content'] });
  assert.equal(answered.status, 'completed');
});

test('the mock honours include reasoning.encrypted_content: its reasoning item carries one, buffered and streamed, as a store: false client sends it back next turn (the official client)', async (t) => {
  const { client } = await listening(t);
  const ask = { model: 'gpt-4o-mini', input: input(), reasoning: { summary: 'auto' as const }, store: false, include: ['reasoning.encrypted_content' as const] };
  const buffered = await client.responses.create(ask);
  const streamed = await client.responses.stream({ ...ask, input: input() }).finalResponse();
  for (const response of [buffered, streamed]) {
    const reasoning = response.output.find((item) => item.type === 'reasoning');
    assert.ok(reasoning && reasoning.type === 'reasoning');
    assert.equal(typeof reasoning.encrypted_content, 'string');
    assert.ok(reasoning.encrypted_content);
  }
  // Not asked, none (an upstream includes it only when asked).
  const plain = await client.responses.create({ ...ask, input: input(), include: [] });
  const reasoning = plain.output.find((item) => item.type === 'reasoning');
  assert.ok(reasoning && reasoning.type === 'reasoning');
  assert.equal(reasoning.encrypted_content, undefined);
});

test("an include value outside the OpenAPI document's IncludeEnum is a 400 naming include before any run, on the mock and a live upstream alike; each value it lists is sent on (the official client)", async (t) => {
  const listed = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')).components.schemas.IncludeEnum.enum as string[];
  const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, upstreamEvents('Included.').at(-1)!.response));
  const live = await liveGateway(t, upstream);
  const mock = await listening(t);
  for (const [label, { client }] of [['mock', mock], ['live', live]] as const) {
    for (const stream of [false, true]) {
      const error = await client.responses.create({ model: 'gpt-4o-mini', input: input(), include: ['reasoning.encrypted_content', 'nope' as never], stream }).then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof OpenAI.BadRequestError, `${label}, stream: ${stream}: answered instead of refused`);
      assert.equal(error.param, 'include');
      assert.match(error.message, /include.*nope/);
    }
  }
  assert.equal(upstream.requests.length, 0, 'refused before any run reached the upstream');
  const answered = await live.client.responses.create({ model: 'gpt-4o-mini', input: input(), include: listed as never });
  assert.equal(answered.status, 'completed');
  assert.deepEqual(upstream.requests[0]!.body.include, listed);
});

test("the tool types svc refuses are those docs/gateway.md lists: every type of the OpenAPI document's Tool union but function, custom, namespace and tool_search (shell, local_shell, apply_patch among them), in tools and tool_choice, is a 400 on its type before any run; max_tool_calls is relayed as sent (the official client)", async (t) => {
  const schemas = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')).components.schemas;
  const typesOf = (union: Array<{ $ref: string }>) =>
    union.flatMap(({ $ref }) => (schemas[$ref.split('/').at(-1)!].properties?.type?.enum ?? []) as string[]);
  const declarable = new Set(['function', 'custom', 'namespace', 'tool_search']);
  const refusedTools = typesOf(schemas.Tool.oneOf).filter((type) => !declarable.has(type));
  const refusedChoices = typesOf(schemas.ToolChoiceParam.oneOf).filter((type) => type !== 'function' && type !== 'custom' && type !== 'allowed_tools');
  // docs/gateway.md's validation of the wire names each refused type and says what becomes of max_tool_calls.
  const doc = readFileSync(join(ROOT, 'docs', 'gateway.md'), 'utf8');
  const validation = doc.split('\n## `POST /v1/responses`\n')[1]!.split('\n- **Streaming.**')[0]!;
  for (const type of [...refusedTools, ...refusedChoices, 'max_tool_calls']) assert.ok(validation.includes(`\`${type}\``), `docs/gateway.md names ${type}`);
  const upstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 200, upstreamEvents('Relayed.').at(-1)!.response));
  const { client } = await liveGateway(t, upstream);
  const refused = async (body: Record<string, unknown>, param: string) => {
    const error = await client.responses.create({ model: 'gpt-4o-mini', input: input(), ...body } as never).then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof OpenAI.BadRequestError, `${JSON.stringify(body)}: answered instead of refused`);
    assert.equal(error.param, param);
  };
  for (const type of refusedTools) await refused({ tools: [{ type }] }, 'tools[0].type');
  for (const type of refusedChoices) await refused({ tools: [WEATHER], tool_choice: { type } }, 'tool_choice');
  assert.equal(upstream.requests.length, 0, 'refused before any run reached the upstream');
  // Not in this client's types: the SDK sends unknown fields as given.
  const relayed = await client.responses.create({ model: 'gpt-4o-mini', input: input(), tools: [WEATHER], max_tool_calls: 2 } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
  assert.equal(relayed.status, 'completed');
  assert.equal(upstream.requests[0]!.body.max_tool_calls, 2);
});
