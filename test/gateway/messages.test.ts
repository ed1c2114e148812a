/**
 * The messages wire with the official messages SDK against a listening svc (mock provider), and against a fake
 * messages-compatible upstream for the live path: header names, mid-stream errors, truncation, abort.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { betaJSONSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { jsonSchemaOutputFormat } from '@anthropic-ai/sdk/helpers/json-schema';
import { bearer, build, json } from '../support/build.ts';
import { messageToEvents } from '../../src/gateway/wire-replay.ts';
import { messageEvents, sendJson, sleep, startFakeUpstream, startSse, streamUntilClientCloses, untilClientCloses, type FakeUpstream } from '../support/fake-upstream.ts';
import { holdLongTimers } from '../support/long-timers.ts';
import { finishedRun, finishedRuns } from '../support/finished-runs.ts';

const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

async function listening(t: TestContext, env: Record<string, string> = {}) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 0 }) };
}

let counter = 0;
const ask = (text = 'hello') => [{ role: 'user' as const, content: `${text} #${++counter} ${process.hrtime.bigint()}` }];

test('messages.create through the SDK: message shape, usage, evidence headers, and an exact-cache hit', async (t) => {
  const { client, app } = await listening(t);
  const messages = ask('what is svc');
  const { data, response } = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, system: 'be brief', messages }).withResponse();
  assert.equal(data.type, 'message');
  assert.equal(data.role, 'assistant');
  assert.equal(data.content[0]!.type, 'text');
  assert.equal(data.stop_reason, 'end_turn');
  assert.ok(data.usage.input_tokens > 0 && data.usage.output_tokens > 0);
  assert.match(response.headers.get('x-svc-run-id') ?? '', /^run_/);
  assert.equal(response.headers.get('x-svc-route'), 'live');
  const again = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, system: 'be brief', messages }).withResponse();
  assert.equal(again.response.headers.get('x-svc-route'), 'exact_cache');
  assert.deepEqual(again.data.content, data.content);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.wire, 'messages');
  assert.equal(run.status, 'completed');
  assert.equal(run.usage.promptTokens, data.usage.input_tokens);
});

test('messages.stream(): one message_start with input tokens, ordered blocks, valid tool_use input, finalMessage', async (t) => {
  const { client } = await listening(t);
  const params = { model: 'claude-sonnet-4-5', max_tokens: 512, messages: ask('weather in Oslo?'), tools: [WEATHER], tool_choice: { type: 'any' as const } };
  const stream = client.messages.stream(params);
  const events: Array<{ type: string; [k: string]: any }> = [];
  stream.on('streamEvent', (event) => events.push(event as never));
  const final = await stream.finalMessage();
  assert.equal(events.filter((event) => event.type === 'message_start').length, 1);
  assert.ok(events[0]!.type === 'message_start' && events[0]!.message.usage.input_tokens > 0);
  assert.equal(events.at(-1)!.type, 'message_stop');
  const starts = events.filter((event) => event.type === 'content_block_start').map((event) => event.index);
  assert.deepEqual(starts, starts.map((_, i) => i));
  const toolUse = final.content.find((block) => block.type === 'tool_use');
  assert.ok(toolUse && toolUse.type === 'tool_use');
  assert.equal(toolUse.name, 'get_weather');
  assert.equal(typeof (toolUse.input as { city: unknown }).city, 'string');
  const partial = events
    .filter((event) => event.type === 'content_block_delta' && event.delta.type === 'input_json_delta')
    .map((event) => event.delta.partial_json)
    .join('');
  assert.deepEqual(JSON.parse(partial), toolUse.input);
  assert.equal(final.stop_reason, 'tool_use');
  const delta = events.find((event) => event.type === 'message_delta')!;
  assert.ok(delta.usage.output_tokens > 0);

  // The same streamed request again is replayed from the cache, as a stream the SDK assembles identically.
  const replay = client.messages.stream(params);
  const replayed = await replay.finalMessage();
  assert.deepEqual(replayed.content, final.content);
  assert.equal(replayed.stop_reason, 'tool_use');
  const { response } = await replay.withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
});

test('count_tokens: a local count for system, messages, tools and tool_choice, with no run', async (t) => {
  const { client, app } = await listening(t);
  const base = { model: 'claude-sonnet-4-5', messages: [{ role: 'user' as const, content: 'How many tokens is this sentence?' }] };
  const plain = await client.messages.countTokens(base);
  assert.ok(plain.input_tokens > 5);
  const withSystem = await client.messages.countTokens({ ...base, system: 'You are a careful assistant who answers briefly.' });
  const withTools = await client.messages.countTokens({ ...base, tools: [WEATHER], tool_choice: { type: 'auto' } });
  assert.ok(withSystem.input_tokens > plain.input_tokens);
  assert.ok(withTools.input_tokens > plain.input_tokens);
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  const bad = await app.inject({ method: 'POST', url: '/v1/messages/count_tokens', payload: { model: 'claude-sonnet-4-5' } });
  assert.equal(bad.statusCode, 400);
  assert.equal(json(bad).type, 'error');
});

test('validation: messages-shaped 400s and no run; beta tokens are refused in the body', async (t) => {
  const { app } = await build(t);
  const cases: Array<[string, unknown]> = [
    ['missing model', { max_tokens: 10, messages: ask() }],
    ['empty messages', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [] }],
    ['missing max_tokens', { model: 'claude-sonnet-4-5', messages: ask() }],
    ['zero max_tokens', { model: 'claude-sonnet-4-5', max_tokens: 0, messages: ask() }],
    ['bad role', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] }],
    ['betas in body', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: ask(), betas: ['x'] }],
    ['tool_choice undeclared', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: ask(), tools: [WEATHER], tool_choice: { type: 'tool', name: 'nope' } }],
    ['two tools of one name', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: ask(), tools: [WEATHER, { ...WEATHER, input_schema: { type: 'object' } }] }],
    ['bad tool schema', { model: 'claude-sonnet-4-5', max_tokens: 10, messages: ask(), tools: [{ name: 'f', input_schema: { type: 'object', properties: { a: { type: 'nonsense' } } } }] }],
  ];
  for (const [name, payload] of cases) {
    const response = await app.inject({ method: 'POST', url: '/v1/messages', payload: payload as object });
    assert.equal(response.statusCode, 400, name);
    const body = json(response);
    assert.equal(body.type, 'error', name);
    assert.equal(body.error.type, 'invalid_request_error', name);
    assert.equal(typeof body.error.message, 'string', name);
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
});

test('protected mode: the SDK authenticates with its key (this SDK sends it as Authorization: Bearer; raw x-api-key calls: test/api/auth.test.ts); a wrong key gets the messages-shaped 401', async (t) => {
  const { app, address } = await listening(t, { SVC_API_KEY: 'bootstrap-token-messages-0001' });
  const token = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer('bootstrap-token-messages-0001'), payload: { name: 'sdk' } })).token;
  const good = new Anthropic({ baseURL: address, apiKey: token, maxRetries: 0 });
  const message = await good.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  assert.equal(message.type, 'message');
  const bad = new Anthropic({ baseURL: address, apiKey: 'svc_not-a-real-key-000000000000000000000000000', maxRetries: 0 });
  await assert.rejects(bad.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }), (error: unknown) => {
    assert.ok(error instanceof Anthropic.AuthenticationError);
    assert.equal((error.error as { type: string }).type, 'error');
    return true;
  });
});

test('protected mode: the SDK lists and retrieves models (it sends its key as Bearer); an x-api-key sent to /v1/models is a 401 that says where it is read', async (t) => {
  const { app, address } = await listening(t, { SVC_API_KEY: 'bootstrap-token-messages-0001' });
  const token = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer('bootstrap-token-messages-0001'), payload: { name: 'sdk' } })).token;
  // This SDK sends `apiKey` as Authorization: Bearer on every request, so models.list() is authenticated as on the
  // chat-completions wires. The list is theirs (SPEC 4.2): chat-completions-shaped items, read here untyped.
  const sdk = new Anthropic({ baseURL: address, apiKey: token, maxRetries: 0 });
  const models: Array<Record<string, unknown>> = [];
  for await (const model of sdk.models.list()) models.push(model as unknown as Record<string, unknown>);
  const sonnet = models.find((model) => model.id === 'claude-sonnet-4-5');
  assert.ok(sonnet, models.map((model) => model.id).join(', '));
  assert.equal(sonnet.object, 'model');
  assert.equal(sonnet.display_name, undefined);
  assert.equal((await sdk.models.retrieve('claude-sonnet-4-5')).id, 'claude-sonnet-4-5');
  // x-api-key is the messages wire's credential only (docs/api.md). A client sending it elsewhere (curl as the messages
  // API documents it, an SDK that sends x-api-key) was told "Missing or invalid bearer token." after sending its key.
  for (const url of ['/v1/models', '/v1/models/claude-sonnet-4-5', '/v1/chat/completions', '/api/v1/keys']) {
    const refused = await fetch(`${address}${url}`, { headers: { 'x-api-key': token, 'anthropic-version': '2023-06-01' } });
    assert.equal(refused.status, 401, url);
    const body = await refused.text();
    assert.match(body, /x-api-key is read on the messages wire \(\/v1\/messages\) only; send the key as Authorization: Bearer/, url);
    assert.ok(!body.includes(token), 'the key is not echoed');
  }
  // A wrong bearer token beside it is refused as any wrong token.
  const wrong = await fetch(`${address}/v1/models`, { headers: { authorization: 'Bearer svc_not-a-real-key-000000000000000000000000000', 'x-api-key': token } });
  assert.equal(wrong.status, 401);
  assert.equal(((await wrong.json()) as { error: { message: string } }).error.message, 'Missing or invalid bearer token.');
});

function writeEvents(res: import('node:http').ServerResponse, events: Array<[string, unknown]>): void {
  for (const [name, data] of events) res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}

/** Stream a message of `blocks` (their block events, in order) between messageEvents' start and its end, and end. */
function streamMessage(res: import('node:http').ServerResponse, blocks: Array<[string, unknown]>): void {
  const [start, , , , , delta, stop] = messageEvents('unused');
  startSse(res);
  writeEvents(res, [start!, ...blocks, delta!, stop!]);
  res.end();
}

/**
 * The live provider's key, random as a real one is: svc masks any eight characters of it in a row in what an upstream
 * says (src/gateway/providers/errors.ts), so a key spelling a word would mask that word in the messages relayed.
 */
const MESSAGES_KEY = 'sk-ant-api03-Qx7Rk2Lm9Vt4Wz8N';

async function liveGateway(t: TestContext, upstream: FakeUpstream) {
  return listening(t, { MESSAGES_API_KEY: MESSAGES_KEY, MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') });
}

test('live messages provider: real header names upstream, the upstream key, streamed text relayed', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('Hi from upstream'));
    res.end();
  });
  const { client, address } = await liveGateway(t, upstream);
  const final = await client.messages
    .stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }, { headers: { 'anthropic-beta': 'tools-2024-04-04,prompt-caching-2024-07-31' } })
    .finalMessage();
  assert.equal((final.content[0] as { text: string }).text, 'Hi from upstream');
  const sent = upstream.requests[0]!;
  assert.equal(sent.url, '/v1/messages');
  assert.equal(sent.headers['x-api-key'], MESSAGES_KEY);
  // The SDK's own version header value passes through unchanged.
  assert.match(String(sent.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
  assert.equal(sent.headers['anthropic-beta'], 'tools-2024-04-04,prompt-caching-2024-07-31');
  assert.equal(sent.body.stream, true);

  // The neutral header spelling of SPEC 4.2 reaches the upstream under the provider's real names too.
  await fetch(`${address}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'messages-version': '2023-06-01', 'messages-beta': 'beta-one' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true }),
  }).then((r) => r.text());
  assert.equal(upstream.requests[1]!.headers['anthropic-beta'], 'beta-one');
  assert.equal(upstream.requests[1]!.headers['anthropic-version'], '2023-06-01');
});

test('the version header is part of the exact-cache identity: another version goes upstream, the default one and none share an answer', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: `answered under ${String(req.headers['anthropic-version'])}` }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } }),
  );
  const { address } = await liveGateway(t, upstream);
  const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  const send = async (headers: Record<string, string>) => {
    const response = await fetch(`${address}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { route: response.headers.get('x-svc-route'), text: ((await response.json()) as { content: Array<{ text: string }> }).content[0]!.text };
  };
  assert.deepEqual(await send({ 'anthropic-version': '2023-06-01' }), { route: 'live', text: 'answered under 2023-06-01' });
  assert.deepEqual(await send({ 'anthropic-version': '2023-01-01' }), { route: 'live', text: 'answered under 2023-01-01' });
  assert.deepEqual(await send({ 'messages-version': '2023-01-01' }), { route: 'exact_cache', text: 'answered under 2023-01-01' });
  // No version header: the upstream is sent the default one, whose answer this is.
  assert.deepEqual(await send({}), { route: 'exact_cache', text: 'answered under 2023-06-01' });
  assert.equal(upstream.requests.length, 2);
});

test("a body field named like the cache key's header members (@betas, @version) never shares an answer with the headers it imitates", async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: `betas ${String(req.headers['anthropic-beta'] ?? 'none')}, version ${String(req.headers['anthropic-version'])}` }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } }),
  );
  const { address } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const send = async (body: Record<string, unknown>, headers: Record<string, string>) => {
    const response = await fetch(`${address}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', ...headers }, body: JSON.stringify(body) });
    return { route: response.headers.get('x-svc-route'), text: ((await response.json()) as { content: Array<{ text: string }> }).content[0]!.text };
  };
  // A compatible upstream that ignores fields it does not know answers the imitations as plain requests.
  assert.equal((await send({ ...request, '@betas': ['beta-one'], '@version': '2023-01-01' }, {})).text, 'betas none, version 2023-06-01');
  assert.deepEqual(await send(request, { 'anthropic-beta': 'beta-one', 'anthropic-version': '2023-01-01' }), { route: 'live', text: 'betas beta-one, version 2023-01-01' });
  assert.equal(upstream.requests.length, 2);
});

test('live messages stream: a mid-stream error event and a truncated stream end with an error event and a failed run', async (t) => {
  let mode: 'error' | 'truncated' = 'error';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = messageEvents('partial');
    writeEvents(res, events.slice(0, 4));
    if (mode === 'error') writeEvents(res, [['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]]);
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  for (const current of ['error', 'truncated'] as const) {
    mode = current;
    const response = await fetch(`${address}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true }),
    });
    const text = await response.text();
    assert.equal((text.match(/event: message_start/g) ?? []).length, 1, current);
    assert.match(text, /event: error\ndata: \{"type":"error","error":\{"type":"\w+","message"/, current);
    assert.doesNotMatch(text, /event: message_stop/, current);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', current);
    assert.ok(run.usage.promptTokens > 0, current);
  }
});

test('live messages stream: an error event before any other is answered with its status in the messages error shape', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, [['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]]);
    res.end();
  });
  const { address, app, client } = await liveGateway(t, upstream);
  const response = await fetch(`${address}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true }),
  });
  // overloaded_error stands for the provider's 529, which this wire answers as it does.
  assert.equal(response.status, 529);
  const body = (await response.json()) as { type: string; error: { type: string; message: string } };
  assert.equal(body.type, 'error');
  assert.equal(body.error.type, 'overloaded_error');
  assert.equal(typeof body.error.message, 'string');
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'upstream_error');
  await assert.rejects(
    client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true }),
    (error: unknown) => error instanceof Anthropic.APIError && error.status === 529,
  );
});

test('live messages stream: a tool_use input nested past 128 levels (JSON inside the deltas\' strings) ends the stream with an invalid tool call', async (t) => {
  const deep = `{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_deep', name: 'get_weather', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: deep } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
  });
  const { address, app } = await liveGateway(t, upstream);
  const response = await fetch(`${address}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER], stream: true }),
  });
  const text = await response.text();
  assert.match(text, /event: error/);
  assert.doesNotMatch(text, /toolu_deep/);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'invalid_tool_call');
  assert.match(run.error.message, /nests more than 128 levels deep/);
});

test('live messages stream: a tool_use refused at its content_block_stop records the message_delta usage sent with it, and its client gets the error without svc waiting on an upstream that stalls there', async (t) => {
  const [start, , , , , , stop] = messageEvents('unused');
  // Its input fails the declared schema (no `city`): refused at the block's end, when the input is whole.
  const refused: Array<[string, unknown]> = [
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_town', name: 'get_weather', input: {} } }],
    ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"town":"Oslo"}' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ];
  let stalls = false;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, [start!, ...refused]);
    // Stalling: no message_delta and no end, the connection open until the test ends.
    if (stalls) return;
    writeEvents(res, [['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 42 } }], stop!]);
    res.end();
  });
  const { app, client } = await liveGateway(t, upstream);
  const refusedRun = async () => {
    const { data: stream, response } = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER], stream: true }).withResponse();
    await assert.rejects(async () => {
      for await (const _event of stream);
    }, (error: unknown) => error instanceof Anthropic.APIError && /get_weather/.test(error.message));
    // The error event went out after the run was recorded: it is failed already.
    return json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
  };

  const prompt = await refusedRun();
  assert.equal(prompt.run.status, 'failed');
  assert.equal(prompt.run.error.kind, 'invalid_tool_call');
  assert.deepEqual(prompt.run.usage, { promptTokens: 12, completionTokens: 42, totalTokens: 54 }, 'the usage the upstream sent with the refused block');

  stalls = true;
  // svc's time bounds held: the client's error must come without svc waiting on the upstream (holdLongTimers).
  const restoreTimers = holdLongTimers(t);
  const stalled = await refusedRun();
  restoreTimers();
  assert.equal(stalled.run.status, 'failed');
  assert.equal(stalled.run.error.kind, 'invalid_tool_call');
  assert.ok(stalled.events.some((event: { type: string }) => event.type === 'usage.estimated'), 'no message_delta came: svc estimated the output');
});

test('live messages stream: a client abort reaches the upstream and the run is finalised', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('start').slice(0, 3));
    await streamUntilClientCloses(res, (i) =>
      res.write(`event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `word${i} ` } })}\n\n`),
    );
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const controller = new AbortController();
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 4096, messages: ask() }, { signal: controller.signal });
  let deltas = 0;
  stream.on('text', () => {
    deltas += 1;
    if (deltas === 3) controller.abort();
  });
  await stream.finalMessage().catch(() => undefined);
  await upstream.clientClosed();
  const [run] = await finishedRuns(app);
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'aborted');
});

test("live messages: a client that leaves while svc reads an upstream's error body (a 503 whose body stalls) is recorded as aborted, as on the chat wire, not as the upstream's failure, buffered and streamed", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    res.writeHead(503, { 'content-type': 'application/json' });
    res.write('{"type":"error","error":');
    return untilClientCloses(res);
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const stream of [false, true]) {
    const asked = upstream.requests.length;
    const controller = new AbortController();
    const answer = client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, messages: ask('left') }, { signal: controller.signal });
    while (upstream.requests.length === asked) await sleep(10);
    controller.abort();
    await assert.rejects(answer, (error: unknown) => error instanceof Anthropic.APIUserAbortError);
    await upstream.clientClosed();
    const [run] = await finishedRuns(app);
    assert.equal(run.status, 'failed', `stream: ${stream}`);
    assert.equal(run.error.kind, 'aborted', `stream: ${stream}`);
    upstream.requests.forEach((request) => (request.clientClosed = false));
  }
});

test("a streamed text block's citations are kept in order in the assembled answer: a cache hit returns them", async (t) => {
  const citation = (n: number) => ({ type: 'char_location', cited_text: `quote ${n}`, document_index: 0, document_title: 'Doc', start_char_index: n, end_char_index: n + 5 });
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '', citations: null } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Cited.' } }],
      ...[1, 2, 3].map((n): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'citations_delta', citation: citation(n) } }]),
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  await client.messages.stream(request).finalMessage();
  const hit = await client.messages.create(request);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual((hit.content[0] as { citations?: unknown }).citations, [citation(1), citation(2), citation(3)]);
});

test("a streamed thinking block's signature is kept in the assembled answer: a cache hit returns it, buffered and streamed", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, [
      ['message_start', { type: 'message_start', message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } } }],
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'let me think' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG_abc123==' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Paris.' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 5 } }],
      ['message_stop', { type: 'message_stop' }],
    ]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const live = await client.messages.stream(request).finalMessage();
  assert.deepEqual(live.content[0], { type: 'thinking', thinking: 'let me think', signature: 'SIG_abc123==' });
  const hit = await client.messages.create(request);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(hit.content[0], { type: 'thinking', thinking: 'let me think', signature: 'SIG_abc123==' });
  const replayed = await client.messages.stream(request).finalMessage();
  assert.deepEqual(replayed.content[0], { type: 'thinking', thinking: 'let me think', signature: 'SIG_abc123==' });
});

test("a cache hit replayed as a stream gives the SDK each text block's citations as the stored answer has them", async (t) => {
  const citation = (n: number) => ({ type: 'char_location', cited_text: `quote ${n}`, document_index: 0, document_title: 'Doc', start_char_index: n, end_char_index: n + 5 });
  const content = [
    { type: 'text', text: 'Cited twice.', citations: [citation(1), citation(2)] },
    { type: 'text', text: 'Uncited.', citations: null },
    { type: 'text', text: '', citations: [] },
  ];
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content, stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } }),
  );
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const live = await client.messages.create(request);
  assert.deepEqual(live.content, content);
  const replayed = await client.messages.stream(request).finalMessage();
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(replayed.content, content);
});

test("a streamed server_tool_use block's input is kept in the assembled answer: a cache hit returns it, buffered and streamed", async (t) => {
  let json = ['{"query": "weather', ' in Oslo"}'];
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: {} } }],
      ...json.map((partial_json): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json } }]),
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
  });
  const { client, address } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  // The input as the SDK's inputJson events give it (a client showing the search as it streams), live and replayed.
  const streamed = async () => {
    const stream = client.messages.stream(request);
    let json = '';
    stream.on('inputJson', (piece) => (json += piece));
    return { message: await stream.finalMessage(), input: json === '' ? null : JSON.parse(json) };
  };
  const live = await streamed();
  const expected = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'weather in Oslo' } };
  assert.deepEqual(live.message.content[0], expected);
  assert.deepEqual(live.input, expected.input);
  const hit = await client.messages.create(request);
  const replayed = await streamed();
  assert.equal(upstream.requests.length, 1, 'the repeats are cache hits');
  assert.deepEqual(hit.content[0], expected);
  assert.deepEqual(replayed.message.content[0], expected);
  assert.deepEqual(replayed.input, expected.input);

  // Input that does not parse cannot be kept as the client got it: the answer is not stored.
  json = ['{"query": '];
  const broken = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true });
  for (let i = 0; i < 2; i++) {
    const response = await fetch(`${address}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: broken });
    assert.match(await response.text(), /event: message_stop/);
    assert.equal(response.headers.get('x-svc-route'), 'live');
  }
  assert.equal(upstream.requests.length, 3);
});

test("a streamed answer's message_delta fields (container, stop_details, usage totals) are kept: a cache hit gives the SDK the live message", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = messageEvents('Ran the code.');
    events[0] = ['message_start', { type: 'message_start', message: { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, container: null, usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 } } }];
    events[5] = [
      'message_delta',
      {
        type: 'message_delta',
        delta: { stop_reason: 'end_turn', stop_sequence: null, stop_details: null, container: { id: 'container_1', expires_at: '2030-01-01T00:00:00Z' } },
        usage: { input_tokens: 12, output_tokens: 5, cache_creation_input_tokens: 7, cache_read_input_tokens: 3, server_tool_use: { web_search_requests: 1 } },
      },
    ];
    writeEvents(res, events);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const { id: _live, parsed_output: _parsed, ...live } = await client.messages.stream(request).finalMessage();
  assert.deepEqual(live.container, { id: 'container_1', expires_at: '2030-01-01T00:00:00Z' });
  assert.deepEqual(live.usage, { input_tokens: 12, cache_creation_input_tokens: 7, cache_read_input_tokens: 3, output_tokens: 5, server_tool_use: { web_search_requests: 1 } });
  const { id: _hit, ...hit } = await client.messages.create(request);
  const { id: _replayed, parsed_output: _again, ...replayed } = await client.messages.stream(request).finalMessage();
  assert.equal(upstream.requests.length, 1, 'the repeats are cache hits');
  assert.deepEqual(hit, live);
  assert.deepEqual(replayed, live);
});

test('a tool_result block whose content is neither a string nor typed blocks is a messages-shaped 400 on both routes, with no run', async (t) => {
  const { app } = await build(t);
  const result = (content: unknown) => ({ type: 'tool_result', tool_use_id: 'toolu_1', content });
  const contents = [[null], [5], ['text'], [result([null])], 7];
  for (const content of contents) {
    const messages = [{ role: 'user', content: [result(content)] }];
    for (const [url, payload] of [
      ['/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 10, messages }],
      ['/v1/messages/count_tokens', { model: 'claude-sonnet-4-5', messages }],
    ] as const) {
      const response = await app.inject({ method: 'POST', url, payload });
      assert.equal(response.statusCode, 400, `${url} ${JSON.stringify(content)}`);
      assert.equal(json(response).error.type, 'invalid_request_error');
    }
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  // Still fine: a string, typed blocks (a nested tool_result too), or none.
  for (const content of ['42 degrees', [{ type: 'text', text: '42' }, result([{ type: 'text', text: 'x' }])], undefined]) {
    const response = await app.inject({ method: 'POST', url: '/v1/messages/count_tokens', payload: { model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [result(content)] }] } });
    assert.equal(response.statusCode, 200);
  }
});

test('live messages: malformed upstream events and blocks are bad responses (a failed run of that kind, a typed SDK error), not network failures', async (t) => {
  const [start, blockStart, , delta, blockStop, messageDelta, stop] = messageEvents('hello');
  const streams: Record<string, string> = {
    'data: null': 'event: content_block_delta\ndata: null\n\n',
    'data: 5': 'event: content_block_delta\ndata: 5\n\n',
    'a delta event without delta': `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0 })}\n\n`,
    'a second start of block 0': `event: content_block_start\ndata: ${JSON.stringify(blockStart![1])}\n\n`,
    'an unknown event type with a line break': `event: future\ndata: ${JSON.stringify({ type: 'future\n\nevent: message_stop' })}\n\n`,
    'a start of block 2 after block 0': `event: content_block_start\ndata: ${JSON.stringify({ ...(blockStart![1] as object), index: 2 })}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":2}\n\n`,
    'a message_delta without delta': `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', usage: { output_tokens: 1 } })}\n\n`,
  };
  let current = '';
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [null], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } });
    startSse(res);
    writeEvents(res, [start!, blockStart!, delta!]);
    res.write(streams[current]!);
    writeEvents(res, [blockStop!, messageDelta!, stop!]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const lastRun = async () => (await finishedRuns(app, '?limit=1'))[0];
  for (const name of Object.keys(streams)) {
    current = name;
    await assert.rejects(client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).finalMessage(), Anthropic.AnthropicError, name);
    const run = await lastRun();
    assert.equal(run.status, 'failed', name);
    assert.equal(run.error.kind, 'bad_response', `${name}: ${run.error.message}`);
  }
  await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }), (error: unknown) => error instanceof Anthropic.APIError && error.status === 502);
  const run = await lastRun();
  assert.equal(run.error.kind, 'bad_response', run.error.message);
});

test('the mock ends a text at the earliest stop sequence with stop_reason stop_sequence and the sequence, buffered and streamed', async (t) => {
  const { client } = await listening(t);
  // The mock quotes the last user message: the answer holds both sequences, "world" first.
  const request = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user' as const, content: `say hello world and goodbye #${++counter}` }], stop_sequences: ['goodbye', 'world'] };
  for (const message of [await client.messages.create(request), await client.messages.stream({ ...request, messages: [{ role: 'user', content: `say hello world and goodbye #${++counter}` }] }).finalMessage()]) {
    assert.equal(message.stop_reason, 'stop_sequence');
    assert.equal(message.stop_sequence, 'world');
    const text = (message.content[0] as { text: string }).text;
    assert.match(text, /say hello $/);
    assert.ok(message.usage.output_tokens > 0 && message.usage.output_tokens < 20, String(message.usage.output_tokens));
  }
  const plain = await client.messages.create({ ...request, stop_sequences: ['nowhere in the answer'] });
  assert.equal(plain.stop_reason, 'end_turn');
  assert.equal(plain.stop_sequence, null);
});

test('a stop sequence that ends the mock\'s text before its first character still counts as output: the sequence generated is billed, as the provider bills it, so an empty answer reports at least one output token, buffered and streamed', async (t) => {
  const { client } = await listening(t);
  // Every text answer of the mock starts with "Mock answer".
  const ask = () => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user' as const, content: `say hello #${++counter}` }], stop_sequences: ['Mock answer'] });
  for (const message of [await client.messages.create(ask()), await client.messages.stream(ask()).finalMessage()]) {
    assert.equal(message.stop_reason, 'stop_sequence');
    assert.equal(message.stop_sequence, 'Mock answer');
    assert.deepEqual(message.content, []);
    assert.ok(message.usage.output_tokens >= 1, `an empty answer reported ${message.usage.output_tokens} output tokens`);
  }
});

test("the mock honours a tool_choice forcing a provider-defined tool (no input_schema): a server tool (web_search) is a server_tool_use block before its text, a client one (bash) a tool_use; never a 400, nor a text answer ignoring the choice, buffered and streamed", async (t) => {
  const { client } = await listening(t);
  const webSearch = { type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 1 };
  const bash = { type: 'bash_20250124' as const, name: 'bash' as const };
  const cases: Array<{ tools: Anthropic.Messages.ToolUnion[]; name: string; block: string; stop: string }> = [
    { tools: [webSearch], name: 'web_search', block: 'server_tool_use', stop: 'end_turn' },
    // Beside a function tool the mock could call (and the planner's choice of it named a tool it did not know: a 400).
    { tools: [WEATHER, webSearch], name: 'web_search', block: 'server_tool_use', stop: 'end_turn' },
    { tools: [bash, WEATHER], name: 'bash', block: 'tool_use', stop: 'tool_use' },
  ];
  for (const { tools, name, block, stop } of cases) {
    const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask('what is new in Oslo'), tools, tool_choice: { type: 'tool' as const, name } });
    for (const [how, message] of [['buffered', await client.messages.create(request())], ['streamed', await client.messages.stream(request()).finalMessage()]] as const) {
      const label = `${name} beside ${tools.length - 1} other, ${how}`;
      const called = message.content.filter((part) => part.type === 'tool_use' || part.type === 'server_tool_use');
      assert.deepEqual(called.map((part) => [part.type, (part as { name: string }).name]), [[block, name]], label);
      assert.equal(message.stop_reason, stop, label);
      assert.match((called[0] as { id: string }).id, block === 'tool_use' ? /^toolu_/ : /^srvtoolu_/, label);
    }
  }
});

test("a cache hit replayed as a stream keeps a tool_use block's own fields (caller) beside its input", async (t) => {
  const block = { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' }, caller: { type: 'direct' } };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [block], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } }),
  );
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER] };
  assert.deepEqual((await client.messages.create(request)).content, [block]);
  const replayed = await client.messages.stream(request).finalMessage();
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(replayed.content, [block]);
});

test("live messages stream: a message_delta without usage gets output tokens from the local count, so the SDK's stream completes", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = messageEvents('A few words of answer.');
    events[5] = ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null } }];
    writeEvents(res, events);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const { data: stream, response } = await client.messages.stream(request).withResponse();
  const live = await stream.finalMessage();
  assert.equal((live.content[0] as { text: string }).text, 'A few words of answer.');
  assert.ok(live.usage.output_tokens > 1, String(live.usage.output_tokens));
  const runId = response.headers.get('x-svc-run-id');
  const { run } = await finishedRun(app, runId);
  assert.equal(run.usage.completionTokens, live.usage.output_tokens);
  const hit = await client.messages.create(request);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(hit.usage, live.usage);
});

test('a thinking block sent two signature_deltas keeps the last signature, as the SDK does: a cache hit answers the one the client got', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'let me think' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG_first' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG_second' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const live = await client.messages.stream(request).finalMessage();
  assert.deepEqual(live.content[0], { type: 'thinking', thinking: 'let me think', signature: 'SIG_second' });
  const hit = await client.messages.create(request);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(hit.content[0], live.content[0]);
});

test("text a content_block_start already carries stays in the assembled answer before its deltas': a cache hit answers what the SDK joined", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: 'First, ', signature: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'then.' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: 'Hello ' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'world.' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const live = await client.messages.stream(request).finalMessage();
  assert.deepEqual(live.content, [
    { type: 'thinking', thinking: 'First, then.', signature: 'SIG' },
    { type: 'text', text: 'Hello world.' },
  ]);
  const hit = await client.messages.create(request);
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(hit.content, live.content);
});

test('a buffered upstream answer without usage gets the local counts: the SDK has usage, and a cache hit replayed as a stream is no 500', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'An answer of some words.' }], stop_reason: 'end_turn', stop_sequence: null }),
  );
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const { id: _live, ...live } = await client.messages.create(request);
  assert.ok(live.usage.input_tokens > 0 && live.usage.output_tokens > 0, JSON.stringify(live.usage));
  const { id: _replayed, parsed_output: _parsed, ...replayed } = await client.messages.stream(request).finalMessage();
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  // As JSON: the SDK's accumulator sets `stop_details: undefined` from a message_delta without it.
  assert.deepEqual(JSON.parse(JSON.stringify(replayed)), live);
  // An answer stored without usage before (kept as the upstream sent it) replays with zeros.
  const { usage: _usage, ...stored } = live;
  const events = messageToEvents({ ...stored, id: 'msg_old' } as never);
  assert.deepEqual(events.at(-2), { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } });
});

test("live messages stream cut after message_start (truncated, or the client leaves) records the input tokens message_start reported, not the local estimate", async (t) => {
  const REPORTED = 4321;
  let mode: 'truncated' | 'abort' = 'truncated';
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    const events = messageEvents('partial answer');
    (events[0]![1] as { message: { usage: { input_tokens: number } } }).message.usage.input_tokens = REPORTED;
    writeEvents(res, events.slice(0, 4));
    if (mode === 'abort') {
      await streamUntilClientCloses(res, (i) => writeEvents(res, [['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: `word${i} ` } }]]));
    }
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const finished = async (runId: string | null) => (await finishedRun(app, runId)).run;

  const cut = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  const { response } = await cut.withResponse();
  await cut.finalMessage().catch(() => undefined);
  const truncated = await finished(response.headers.get('x-svc-run-id'));
  assert.equal(truncated.status, 'failed');
  assert.equal(truncated.usage.promptTokens, REPORTED);

  mode = 'abort';
  const controller = new AbortController();
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }, { signal: controller.signal });
  const { response: aborting } = await stream.withResponse();
  let deltas = 0;
  stream.on('text', () => {
    if (++deltas === 3) controller.abort();
  });
  await stream.finalMessage().catch(() => undefined);
  await upstream.clientClosed();
  const aborted = await finished(aborting.headers.get('x-svc-run-id'));
  assert.equal(aborted.error.kind, 'aborted');
  assert.equal(aborted.usage.promptTokens, REPORTED);
  const economics = json(await app.inject({ url: `/api/v1/runs/${aborted.id}/economics` }));
  assert.equal(economics.attempts.served[0].promptTokens, REPORTED);
});

test("live messages stream: a message_start reporting input_tokens 0 beside cache tokens is a reported count: the SDK and the run get the upstream's usage", async (t) => {
  const usage = { input_tokens: 0, cache_read_input_tokens: 3000, cache_creation_input_tokens: 0, output_tokens: 1 };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('from the cache', usage));
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask('a long cached prompt') });
  const final = await stream.finalMessage();
  const { response } = await stream.withResponse();
  assert.equal(final.usage.input_tokens, 0);
  assert.equal(final.usage.cache_read_input_tokens, 3000);
  const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
  assert.equal(detail.run.status, 'completed');
  assert.deepEqual(detail.run.usage, { promptTokens: 3000, completionTokens: 5, totalTokens: 3005 });
  // claude-sonnet-4-5: a cache read $0.30, output $15 per million: the prompt is priced as read from the cache.
  assert.ok(Math.abs(detail.run.costUsd - (3000 * 0.3 + 5 * 15) / 1e6) < 1e-12, String(detail.run.costUsd));
  assert.ok(!detail.events.some((event: { type: string }) => event.type === 'usage.estimated'), 'the usage is the upstream\'s');
});

test("live messages stream: a tool_use refused at its content_block_stop records the output tokens of the message_delta after it, not svc's estimate", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [start, , , , , , stop] = messageEvents('unused');
    writeEvents(res, [
      start!,
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_bad', name: 'get_weather', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"town":"Oslo"}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['message_delta', { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 777 } }],
      stop!,
    ]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 1024, messages: ask(), tools: [WEATHER] });
  const { response } = await stream.withResponse();
  await assert.rejects(stream.finalMessage(), /Invalid tool call/);
  const detail = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
  assert.equal(detail.run.status, 'failed');
  assert.equal(detail.run.error.kind, 'invalid_tool_call');
  assert.deepEqual(detail.run.usage, { promptTokens: 12, completionTokens: 777, totalTokens: 789 });
});

test('a messages usage that is not token counts reaches neither the SDK nor the cache: both get the usage the run records, buffered and streamed', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) {
      const usage = { input_tokens: 12, output_tokens: 'many', cache_read_input_tokens: 0 };
      return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'An answer of some words.' }], stop_reason: 'end_turn', stop_sequence: null, usage });
    }
    startSse(res);
    const events = messageEvents('An answer of some words.');
    (events[5]![1] as { usage: unknown }).usage = { output_tokens: -5 };
    writeEvents(res, events);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const runOf = async (runId: string | null) => json(await app.inject({ url: `/api/v1/runs/${runId}` })).run;
  for (const stream of [false, true]) {
    const label = stream ? 'streamed' : 'buffered';
    const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
    const call = async () => {
      if (!stream) return client.messages.create(request).withResponse();
      const streamed = client.messages.stream(request);
      return { data: await streamed.finalMessage(), response: (await streamed.withResponse()).response };
    };
    const live = await call();
    const liveRun = await runOf(live.response.headers.get('x-svc-run-id'));
    assert.equal(live.data.usage.output_tokens, liveRun.usage.completionTokens, label);
    assert.ok(liveRun.usage.completionTokens > 0, label);
    const hit = await call();
    assert.equal(hit.response.headers.get('x-svc-route'), 'exact_cache', label);
    assert.deepEqual(hit.data.usage, live.data.usage, label);
    assert.deepEqual((await runOf(hit.response.headers.get('x-svc-run-id'))).usage, liveRun.usage, label);
  }
});

test("live messages stream: an upstream error event mid-stream reaches the SDK with the upstream's error type (overloaded_error), not api_error", async (t) => {
  let type = 'overloaded_error';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('partial').slice(0, 4));
    writeEvents(res, [['error', { type: 'error', error: { type, message: 'Overloaded' } }]]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const said of ['overloaded_error', 'rate_limit_error', 'invalid_request_error', 'conflict_error', 'api_error', 'some_new_error']) {
    type = said;
    const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
    const { response } = await stream.withResponse();
    const error = await stream.finalMessage().then(() => null, (thrown: unknown) => thrown);
    assert.ok(error instanceof Anthropic.APIError, said);
    // An error type svc does not know is the upstream's failure: api_error, as before.
    assert.equal((error.error as { error: { type: string } }).error.type, said === 'some_new_error' ? 'api_error' : said, said);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', said);
    assert.equal(run.error.upstreamCode, said, said);
  }
});

test("live messages stream: an overloaded_error mid-stream says so in its message too, the message of the 529 an overloaded_error before the stream started gets, not 'failed'", async (t) => {
  let midStream = true;
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    if (midStream) writeEvents(res, messageEvents('partial').slice(0, 4));
    writeEvents(res, [['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const said = async () => {
    const error = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).finalMessage().then(() => null, (thrown: unknown) => thrown);
    assert.ok(error instanceof Anthropic.APIError, String(error));
    return (error.error as { error: { type: string; message: string } }).error;
  };
  const during = await said();
  midStream = false;
  const before = await said();
  assert.equal(before.type, 'overloaded_error');
  assert.deepEqual(during, before);
});

test("a cache hit replayed as a stream gives the SDK a thinking block's thinking and signature events, as the live stream did", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Paris is the capital ' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'of France.' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'SIG_xyz==' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Paris.' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: ask() };
  const seen = async () => {
    const stream = client.messages.stream(request);
    let thinking = '';
    const signatures: string[] = [];
    stream.on('thinking', (piece) => (thinking += piece));
    stream.on('signature', (signature) => signatures.push(signature));
    const final = await stream.finalMessage();
    const { response } = await stream.withResponse();
    return { thinking, signatures, content: final.content, route: response.headers.get('x-svc-route') };
  };
  const live = await seen();
  assert.deepEqual({ thinking: live.thinking, signatures: live.signatures }, { thinking: 'Paris is the capital of France.', signatures: ['SIG_xyz=='] });
  const hit = await seen();
  assert.equal(hit.route, 'exact_cache');
  assert.deepEqual(hit, { ...live, route: 'exact_cache' });
});

test('count_tokens: a plain-text document counts its text (and a content document its blocks), not the flat count of a PDF page', async (t) => {
  const { client } = await listening(t);
  const text = 'The quick brown fox jumps over the lazy dog near the riverbank at dawn. '.repeat(2000);
  const count = async (block: Record<string, unknown>) =>
    (await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [block as never] }] })).input_tokens;
  const asText = await count({ type: 'text', text });
  assert.ok(asText > 20_000, String(asText));
  const asDocument = await count({ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text }, title: 'fox' });
  const asContent = await count({ type: 'document', source: { type: 'content', content: [{ type: 'text', text }] } });
  for (const counted of [asDocument, asContent]) assert.ok(Math.abs(counted - asText) < 50, `${counted} vs ${asText}`);
  // A content source's entries are not validated: ones that are not blocks count nothing, and are no 500.
  assert.ok((await count({ type: 'document', source: { type: 'content', content: [null, 5, { type: 'text', text: 'hi' }] } })) > 0);
});

test("live messages stream: a message_delta's input_tokens 0 (no count) does not overwrite the SDK's input tokens: the client, the run and a hit have message_start's", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const events = messageEvents('An answer.');
    (events[5]![1] as { usage: unknown }).usage = { input_tokens: 0, output_tokens: 5 };
    writeEvents(res, events);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
  const stream = client.messages.stream(request);
  const live = await stream.finalMessage();
  const { response } = await stream.withResponse();
  assert.equal(live.usage.input_tokens, 12);
  assert.equal(json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run.usage.promptTokens, 12);
  const hit = await client.messages.stream(request).finalMessage();
  assert.equal(upstream.requests.length, 1, 'the repeat is a cache hit');
  assert.deepEqual(hit.usage, live.usage);
});

test('a tool_use block the upstream sent without an id is given one, buffered and streamed, which a cache hit answers too', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    const block = { type: 'tool_use', name: 'get_weather', input: { city: 'Oslo' } };
    if (!req.body.stream) {
      return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [block], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } });
    }
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { ...block, input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":"Oslo"}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  for (const stream of [false, true]) {
    const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER] };
    const call = () => (stream ? client.messages.stream(request).finalMessage() : client.messages.create(request));
    const live = (await call()).content[0] as { id: unknown };
    assert.match(String(live.id), /^toolu_[0-9a-f]{24}$/, stream ? 'streamed' : 'buffered');
    assert.deepEqual((await call()).content[0], live, 'a cache hit answers the id the client got');
  }
  assert.equal(upstream.requests.length, 2);
});

test("thinking and content blocks' own fields are checked by svc: a malformed one is a 400 naming the field, the upstream never asked; the shapes the API takes pass", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => streamMessage(res, messageEvents('ok').slice(1, 5)));
  const { client, app } = await liveGateway(t, upstream);
  const base = { model: 'claude-sonnet-4-5', max_tokens: 2048, stream: true as const };
  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['budget below 1024', { thinking: { type: 'enabled', budget_tokens: 512 } }, 'thinking.budget_tokens'],
    ['budget not an integer', { thinking: { type: 'enabled', budget_tokens: '2000' } }, 'thinking.budget_tokens'],
    ['budget missing', { thinking: { type: 'enabled' } }, 'thinking.budget_tokens'],
    ['budget not below max_tokens', { thinking: { type: 'enabled', budget_tokens: 2048 } }, 'thinking.budget_tokens'],
    ['thinking not an object', { thinking: 'enabled' }, 'thinking'],
    ['thinking without a type', { thinking: { budget_tokens: 2000 } }, 'thinking.type'],
    ['display not a string', { thinking: { type: 'adaptive', display: 5 } }, 'thinking.display'],
    ['text not a string', { messages: [{ role: 'user', content: [{ type: 'text', text: 5 }] }] }, 'messages.0.content.0.text'],
    ['image without a source', { messages: [{ role: 'user', content: [{ type: 'image' }] }] }, 'messages.0.content.0.source'],
    ['base64 image without data', { messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png' } }] }] }, 'messages.0.content.0.source.data'],
    ['tool_use input not an object', { messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: '{}' }] }] }, 'messages.0.content.0.input'],
    ['tool_result without tool_use_id', { messages: [{ role: 'user', content: [{ type: 'tool_result', content: 'x' }] }] }, 'messages.0.content.0.tool_use_id'],
    ['tool_result is_error not a boolean', { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x', is_error: 'yes' }] }] }, 'messages.0.content.0.is_error'],
    ['thinking block without a signature', { messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: 'hm' }] }] }, 'messages.0.content.0.signature'],
    ['system block text not a string', { system: [{ type: 'text', text: null }] }, 'system.0.text'],
  ];
  for (const [label, fields, field] of refused) {
    const request = { ...base, messages: ask(), ...fields } as never;
    await assert.rejects(client.messages.create(request), (error: unknown) => {
      assert.ok(error instanceof Anthropic.BadRequestError, label);
      const body = error.error as { type: string; error: { type: string; message: string } };
      assert.equal(body.type, 'error', label);
      assert.equal(body.error.type, 'invalid_request_error', label);
      assert.ok(body.error.message.includes(`${field}:`), `${label}: ${body.error.message}`);
      return true;
    });
  }
  // count_tokens checks the same shapes (no max_tokens there: only the budget's floor).
  await assert.rejects(
    client.messages.countTokens({ model: base.model, messages: ask(), thinking: { type: 'enabled', budget_tokens: 100 } }),
    (error: unknown) => error instanceof Anthropic.BadRequestError && /thinking\.budget_tokens/.test(error.message),
  );
  assert.equal(upstream.requests.length, 0, 'no malformed request reached the upstream');
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);

  // What the API takes passes through as sent: each thinking type (one svc does not know yet too), a budget past
  // max_tokens with interleaved thinking, which lets it exceed max_tokens, and well-formed blocks of each kind.
  const accepted: Array<[Record<string, unknown>, Record<string, string>?]> = [
    [{ thinking: { type: 'enabled', budget_tokens: 1024, display: 'omitted' } }],
    [{ thinking: { type: 'disabled' } }],
    [{ thinking: { type: 'adaptive' } }],
    [{ thinking: { type: 'between_tools' } }],
    [{ thinking: { type: 'some_future_mode', level: 3 } }],
    [{ thinking: { type: 'enabled', budget_tokens: 8000 } }, { 'anthropic-beta': 'interleaved-thinking-2025-05-14' }],
    [{ messages: [
      { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'SIG' }, { type: 'redacted_thinking', data: 'xyz' }, { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '12 C', is_error: false }, { type: 'some_future_block', anything: 1 }] },
    ] }],
  ];
  for (const [fields, headers] of accepted) {
    const final = await client.messages.stream({ ...base, messages: ask(), ...fields } as never, headers ? { headers } : {}).finalMessage();
    assert.equal(final.type, 'message', JSON.stringify(fields));
    const sent = upstream.requests.at(-1)!.body;
    for (const [key, value] of Object.entries(fields)) if (key !== 'messages') assert.deepEqual(sent[key], value, JSON.stringify(fields));
  }
});

test('an upstream usage of input_tokens 0 without cache tokens is no count, buffered as streamed: the SDK and the run get the local estimate either way; beside cache tokens it stays 0', async (t) => {
  let usage: Record<string, number> = { input_tokens: 0, output_tokens: 5 };
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) {
      return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'An answer.' }], stop_reason: 'end_turn', stop_sequence: null, usage });
    }
    startSse(res);
    writeEvents(res, messageEvents('An answer.', usage));
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const runOf = async (response: Response) => json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  const messages = ask('a prompt of several words');
  const fresh = { headers: { 'x-svc-cache-bypass': 'true' } };
  const buffered = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages }, fresh).withResponse();
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages }, fresh);
  const streamed = { data: await stream.finalMessage(), response: (await stream.withResponse()).response };
  assert.ok(streamed.data.usage.input_tokens > 0, 'the stream gives the local estimate');
  assert.equal(buffered.data.usage.input_tokens, streamed.data.usage.input_tokens, 'buffered as streamed');
  assert.equal((await runOf(buffered.response)).usage.promptTokens, streamed.data.usage.input_tokens);
  assert.equal((await runOf(streamed.response)).usage.promptTokens, streamed.data.usage.input_tokens);

  // A prompt read from the cache whole reports 0 input tokens beside its cache tokens: a count, kept.
  usage = { input_tokens: 0, cache_read_input_tokens: 3000, output_tokens: 5 };
  const cached = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages }, fresh).withResponse();
  assert.equal(cached.data.usage.input_tokens, 0);
  assert.equal((await runOf(cached.response)).usage.promptTokens, 3000);
});

test("an overloaded upstream (HTTP 529, or an overloaded_error event before any other) is answered 529 overloaded_error, the SDK's OverloadedError; other upstream 5xx stay 502 api_error", async (t) => {
  let mode: 'http' | 'event' | 'http-503' = 'http';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    if (mode === 'http') return sendJson(res, 529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    if (mode === 'http-503') return sendJson(res, 503, { type: 'error', error: { type: 'api_error', message: 'Unavailable' } });
    startSse(res);
    writeEvents(res, [['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const cases = [
    ['http', false],
    ['http', true],
    ['event', true],
  ] as const;
  for (const [current, stream] of cases) {
    mode = current;
    const label = `${current} ${stream ? 'streamed' : 'buffered'}`;
    const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
    const call = stream ? client.messages.create({ ...request, stream: true }) : client.messages.create(request);
    const error = await call.then(() => null, (thrown: unknown) => thrown);
    assert.ok(error instanceof Anthropic.OverloadedError, `${label}: ${String(error)}`);
    assert.equal(error.status, 529, label);
    assert.equal((error.error as { error: { type: string } }).error.type, 'overloaded_error', label);
    const run = json(await app.inject({ url: `/api/v1/runs/${error.headers?.get('x-svc-run-id')}` })).run;
    assert.equal(run.status, 'failed', label);
    assert.equal(run.error.kind, 'upstream_error', label);
  }
  mode = 'http-503';
  const other = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).then(() => null, (thrown: unknown) => thrown);
  assert.ok(other instanceof Anthropic.APIError && !(other instanceof Anthropic.OverloadedError));
  assert.equal(other.status, 502);
  assert.equal((other.error as { error: { type: string } }).error.type, 'api_error');
});

test("an upstream's 529 or 503 with retry-after reaches the SDK with that retry-after, as a 429's does (buffered and before a stream started); a 5xx without one gets none", async (t) => {
  let answer: { status: number; headers: Record<string, string> } = { status: 529, headers: {} };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const type = answer.status === 529 ? 'overloaded_error' : 'api_error';
    sendJson(res, answer.status, { type: 'error', error: { type, message: 'Busy' } }, answer.headers);
  });
  const { client } = await liveGateway(t, upstream);
  const failure = async (stream: boolean) => {
    const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() };
    const call = stream ? client.messages.create({ ...request, stream: true }) : client.messages.create(request);
    const error = await call.then(() => null, (thrown: unknown) => thrown);
    assert.ok(error instanceof Anthropic.APIError, String(error));
    return error;
  };
  for (const stream of [false, true]) {
    answer = { status: 529, headers: { 'retry-after': '7' } };
    const overloaded = await failure(stream);
    assert.ok(overloaded instanceof Anthropic.OverloadedError, String(overloaded));
    assert.equal(overloaded.headers?.get('retry-after'), '7', `529 ${stream ? 'streamed' : 'buffered'}`);
    answer = { status: 503, headers: { 'retry-after': '9' } };
    const unavailable = await failure(stream);
    assert.equal(unavailable.status, 502);
    assert.equal(unavailable.headers?.get('retry-after'), '9', `503 ${stream ? 'streamed' : 'buffered'}`);
    answer = { status: 529, headers: {} };
    assert.equal((await failure(stream)).headers?.get('retry-after'), null, 'none was given: none is made up');
    answer = { status: 500, headers: { 'retry-after': '5' } };
    assert.equal((await failure(stream)).headers?.get('retry-after'), null, "a 500's is not one of an upstream saying when to come back");
  }
});

/** The first bytes of an image of `width` x `height` in each format svc reads the size of, then bytes that are no image. */
function imageHeader(format: 'png' | 'gif' | 'jpeg' | 'webp-vp8' | 'webp-vp8l' | 'webp-vp8x', width: number, height: number): Buffer {
  const rest = Buffer.alloc(3000, 0x5a);
  const u16be = (n: number) => Buffer.from([n >> 8, n & 0xff]);
  const u32be = (n: number) => Buffer.from([n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
  const u24le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff]);
  const riff = (chunk: string, body: Buffer) => Buffer.concat([Buffer.from('RIFF'), u32be(0), Buffer.from('WEBP'), Buffer.from(chunk), u32be(0), body, rest]);
  switch (format) {
    case 'png':
      return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), u32be(13), Buffer.from('IHDR'), u32be(width), u32be(height), rest]);
    case 'gif':
      return Buffer.concat([Buffer.from('GIF89a'), Buffer.from([width & 0xff, width >> 8, height & 0xff, height >> 8]), rest]);
    case 'jpeg': {
      // An APP1 (Exif) segment of 2 KB before the frame header, as cameras write: the size is past the first bytes.
      const exif = Buffer.concat([Buffer.from([0xff, 0xe1]), u16be(2002), Buffer.alloc(2000, 0x11)]);
      const sof = Buffer.concat([Buffer.from([0xff, 0xc2]), u16be(17), Buffer.from([8]), u16be(height), u16be(width), Buffer.alloc(10)]);
      return Buffer.concat([Buffer.from([0xff, 0xd8]), exif, sof, rest]);
    }
    case 'webp-vp8':
      return riff('VP8 ', Buffer.concat([Buffer.from([0, 0, 0, 0x9d, 0x01, 0x2a]), Buffer.from([width & 0xff, width >> 8, height & 0xff, height >> 8])]));
    case 'webp-vp8l': {
      const bits = (width - 1) | ((height - 1) << 14);
      return riff('VP8L', Buffer.from([0x2f, bits & 0xff, (bits >>> 8) & 0xff, (bits >>> 16) & 0xff, (bits >>> 24) & 0xff]));
    }
    case 'webp-vp8x':
      return riff('VP8X', Buffer.concat([Buffer.alloc(4), u24le(width - 1), u24le(height - 1)]));
  }
}

test("count_tokens: a base64 image counts its size (width x height / 750, past 1568 px or 1,600 tokens scaled down) read from its header; an image of no readable size counts a flat 1,600", async (t) => {
  const { client } = await listening(t);
  const text = { type: 'text' as const, text: 'What is in this picture?' };
  const count = async (image: Record<string, unknown>) => (await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [image as never, text] }] })).input_tokens;
  const plain = (await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: [{ role: 'user', content: [text] }] })).input_tokens;
  const base64 = (data: Buffer, media_type = 'image/png') => ({ type: 'image', source: { type: 'base64', media_type, data: data.toString('base64') } });
  const formats = ['png', 'gif', 'jpeg', 'webp-vp8', 'webp-vp8l', 'webp-vp8x'] as const;
  for (const format of formats) {
    assert.equal((await count(base64(imageHeader(format, 200, 100)))) - plain, 27, `${format} 200x100`);
    assert.equal((await count(base64(imageHeader(format, 1000, 500)))) - plain, 667, `${format} 1000x500`);
    // 4000x3000 is scaled to 1568 px on its long edge (1568x1176), then to the ~1,600 tokens images are limited to.
    assert.equal((await count(base64(imageHeader(format, 4000, 3000)))) - plain, 1600, `${format} 4000x3000`);
  }
  // Long and thin: only the long edge's bound applies (3136x200 becomes 1568x100).
  assert.equal((await count(base64(imageHeader('png', 3136, 200)))) - plain, 210);
  // No size to read: an address, bytes of no known format, base64 that is not: the flat figure.
  assert.equal((await count({ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } })) - plain, 1600);
  assert.equal((await count(base64(Buffer.alloc(64, 7)))) - plain, 1600);
  assert.equal((await count({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: '%%%% not base64 %%%%' } })) - plain, 1600);
  assert.equal((await count(base64(imageHeader('png', 200, 100).subarray(0, 20)))) - plain, 1600, 'cut before its size');
});

test("live messages stream: a ping before message_start commits nothing: an error after it is answered with its status (529 overloaded_error), an end after it as an empty stream, and a message after it streams as usual", async (t) => {
  const PING: [string, unknown] = ['ping', { type: 'ping' }];
  const FUTURE: [string, unknown] = ['future_notice', { type: 'future_notice', note: 'kept' }];
  const OVERLOADED: [string, unknown] = ['error', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }];
  let events: Array<[string, unknown]> = [];
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, events);
    res.end();
  });
  const { client, app, address } = await liveGateway(t, upstream);
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream: true as const });
  const runOf = async (headers: Headers | undefined) => json(await app.inject({ url: `/api/v1/runs/${headers?.get('x-svc-run-id')}` })).run;

  // A ping (or two), then overloaded_error: the SDK's OverloadedError, as when the error is the first event.
  for (const before of [[PING], [PING, PING]]) {
    events = [...before, OVERLOADED];
    const error = await client.messages.create(request()).then(() => null, (thrown: unknown) => thrown);
    assert.ok(error instanceof Anthropic.OverloadedError, String(error));
    assert.equal(error.status, 529);
    assert.deepEqual(error.error, { type: 'error', error: { type: 'overloaded_error', message: (error.error as { error: { message: string } }).error.message }, request_id: error.requestID });
    const run = await runOf(error.headers);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.kind, 'upstream_error');
  }

  // A ping and then the end is answered as a stream with no event at all.
  const answers: Array<{ status: number; body: unknown; kind: string }> = [];
  for (const sent of [[], [PING]]) {
    events = sent;
    const response = await fetch(`${address}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request()) });
    const body = (await response.json()) as { type: string; error: { type: string } };
    answers.push({ status: response.status, body: body.error.type, kind: (await runOf(response.headers)).error.kind });
  }
  assert.equal(answers[0]!.status, 502);
  assert.deepEqual(answers[1], answers[0]);

  // A ping, an event type svc does not know, then a message: the SDK reads it whole; the unknown event is still relayed
  // (ahead of message_start, as it came), the ping before the answer started is not.
  events = [PING, FUTURE, ...messageEvents('after a ping')];
  const streamed = client.messages.stream(request());
  const final = await streamed.finalMessage();
  assert.equal((final.content[0] as { text: string }).text, 'after a ping');
  assert.equal(final.stop_reason, 'end_turn');
  const run = await runOf((await streamed.withResponse()).response.headers);
  assert.equal(run.status, 'completed');
  const raw = await (await fetch(`${address}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request()) })).text();
  assert.match(raw, /^event: future_notice\ndata: \{"type":"future_notice","note":"kept"\}\n\nevent: message_start\n/);
});

test("live messages stream: blocks that start while a tool_use block is held reach the SDK after it, in order: its final message is the upstream's, as the run's and a cache hit's are", async (t) => {
  const start = (index: number, content_block: object): [string, unknown] => ['content_block_start', { type: 'content_block_start', index, content_block }];
  const delta = (index: number, d: object): [string, unknown] => ['content_block_delta', { type: 'content_block_delta', index, delta: d }];
  const stop = (index: number): [string, unknown] => ['content_block_stop', { type: 'content_block_stop', index }];
  const partial = (index: number, partial_json: string) => delta(index, { type: 'input_json_delta', partial_json });
  const text = (index: number, t: string) => delta(index, { type: 'text_delta', text: t });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    streamMessage(res, [
      start(0, { type: 'tool_use', id: 'toolu_rome', name: 'get_weather', input: {} }),
      partial(0, '{"city":'),
      start(1, { type: 'text', text: '' }),
      text(1, 'side '),
      start(2, { type: 'tool_use', id: 'toolu_oslo', name: 'get_weather', input: {} }),
      partial(0, '"Rome"}'),
      partial(2, '{"ci'),
      stop(0),
      text(1, 'text'),
      partial(2, 'ty":"Oslo"}'),
      stop(2),
      stop(1),
    ]),
  );
  const { client, app } = await liveGateway(t, upstream);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER] };
  const meant = [
    { type: 'tool_use', id: 'toolu_rome', name: 'get_weather', input: { city: 'Rome' } },
    { type: 'text', text: 'side text' },
    { type: 'tool_use', id: 'toolu_oslo', name: 'get_weather', input: { city: 'Oslo' } },
  ];
  const stream = client.messages.stream(request);
  const live = await stream.finalMessage();
  assert.deepEqual(JSON.parse(JSON.stringify(live.content)), meant);
  const run = json(await app.inject({ url: `/api/v1/runs/${(await stream.withResponse()).response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'completed');
  assert.deepEqual((await client.messages.create(request)).content, meant);
  assert.deepEqual(JSON.parse(JSON.stringify((await client.messages.stream(request).finalMessage()).content)), meant);
  assert.equal(upstream.requests.length, 1, 'the repeats are cache hits');
});

test('live messages stream: a tool_use block cut off mid-input by max_tokens is relayed as streamed and the run completes; a cut input is refused when the message ends another way, a block follows it or its tool is not declared', async (t) => {
  type Ending = { stopReason: string; name?: string; json?: string; after?: Array<[string, unknown]> };
  let ending: Ending = { stopReason: 'max_tokens' };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const [start, , , , , , stop] = messageEvents('unused');
    writeEvents(res, [
      start!,
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_cut', name: ending.name ?? 'get_weather', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: ending.json ?? '"Li' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ...(ending.after ?? []),
      ['message_delta', { type: 'message_delta', delta: { stop_reason: ending.stopReason, stop_sequence: null }, usage: { output_tokens: 16 } }],
      stop!,
    ]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: ask(), tools: [WEATHER] });
  const streamed = async (params = request()) => {
    const stream = client.messages.stream(params);
    let pieces = '';
    stream.on('inputJson', (piece) => (pieces += piece));
    const events: string[] = [];
    stream.on('streamEvent', (event) => events.push(event.type));
    const { response } = await stream.withResponse();
    const message = await stream.finalMessage().catch((error: unknown) => error as Error);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    return { message, json: pieces, events, run, route: response.headers.get('x-svc-route') };
  };

  // Cut off by max_tokens: the input as far as it came, the message stopped as the upstream said, the run completed.
  const cut = await streamed();
  assert.ok(!(cut.message instanceof Error), String(cut.message));
  assert.equal(cut.message.stop_reason, 'max_tokens');
  assert.deepEqual(
    cut.message.content.map((block) => [block.type, (block as { id?: string }).id, (block as { name?: string }).name]),
    [['tool_use', 'toolu_cut', 'get_weather']],
  );
  assert.equal(cut.json, '{"city":"Li');
  assert.deepEqual(cut.events, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
  assert.equal(cut.run.status, 'completed');
  assert.deepEqual(cut.run.usage, { promptTokens: 12, completionTokens: 16, totalTokens: 28 });
  // Its input is not one a hit could replay as streamed: the answer is not stored, and the same request goes live.
  const params = request();
  assert.equal((await streamed(params)).route, 'live');
  assert.equal((await streamed(params)).route, 'live');

  // Complete input then max_tokens: checked as ever, and answered.
  ending = { stopReason: 'max_tokens', json: '"Lisbon"}' };
  const whole = await streamed();
  assert.ok(!(whole.message instanceof Error), String(whole.message));
  assert.deepEqual(whole.message.content[0], { type: 'tool_use', id: 'toolu_cut', name: 'get_weather', input: { city: 'Lisbon' } });
  assert.equal(whole.run.status, 'completed');

  // Refused: cut input in a message that stopped for tool_use, a cut input followed by another block, an undeclared tool.
  const refused: Array<[string, Ending, RegExp]> = [
    ['stop_reason tool_use', { stopReason: 'tool_use' }, /not valid JSON/],
    ['a block after it', { stopReason: 'max_tokens', after: [['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }], ['content_block_stop', { type: 'content_block_stop', index: 1 }]] }, /not valid JSON/],
    ['undeclared tool', { stopReason: 'max_tokens', name: 'get_time' }, /not a declared tool/],
    ['complete input off its schema', { stopReason: 'tool_use', json: '7}' }, /do not match its schema/],
  ];
  for (const [label, current, message] of refused) {
    ending = current;
    const answer = await streamed();
    assert.ok(answer.message instanceof Error, label);
    assert.match(answer.message.message, message, label);
    assert.ok(!answer.events.includes('content_block_start'), `${label}: the refused block is never sent`);
    assert.equal(answer.run.status, 'failed', label);
    assert.equal(answer.run.error.kind, 'invalid_tool_call', label);
  }
});

test('live messages buffered: a max_tokens answer whose last block is a tool_use is checked for its tool only (the upstream parsed what came of a cut input); elsewhere, or with another stop_reason, its input is checked against its schema', async (t) => {
  let answer: { stopReason: string; content: object[] } = { stopReason: 'max_tokens', content: [] };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: answer.content, stop_reason: answer.stopReason, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 16 } }),
  );
  const { client } = await liveGateway(t, upstream);
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: ask(), tools: [WEATHER] });
  const tool = (name: string, input: object) => ({ type: 'tool_use', id: `toolu_${name}`, name, input });
  const text = { type: 'text', text: 'Looking it up.' };

  answer = { stopReason: 'max_tokens', content: [text, tool('get_weather', {})] };
  const params = request();
  const cut = await client.messages.create(params);
  assert.equal(cut.stop_reason, 'max_tokens');
  assert.deepEqual(cut.content, answer.content);
  assert.deepEqual((await client.messages.create(params)).content, answer.content, 'a max_tokens answer is stored, and a hit answers it');
  assert.equal(upstream.requests.length, 1);

  const refused: Array<[string, typeof answer]> = [
    ['undeclared tool', { stopReason: 'max_tokens', content: [tool('get_time', {})] }],
    ['not the last block', { stopReason: 'max_tokens', content: [tool('get_weather', {}), text] }],
    ['stop_reason tool_use', { stopReason: 'tool_use', content: [tool('get_weather', {})] }],
  ];
  for (const [label, current] of refused) {
    answer = current;
    await assert.rejects(client.messages.create(request()), (error: unknown) => error instanceof Anthropic.APIError && error.status === 502, label);
  }
});

test("an mcp_toolset tool (the MCP connector's, with no name or schema) reaches the upstream as sent, and its mcp_tool_use and mcp_tool_result blocks reach the SDK, buffered and streamed; count_tokens takes it too", async (t) => {
  const mcpUse = { type: 'mcp_tool_use', id: 'mcptoolu_1', name: 'echo', server_name: 'docs', input: { text: 'hi' } };
  const mcpResult = { type: 'mcp_tool_result', tool_use_id: 'mcptoolu_1', is_error: false, content: [{ type: 'text', text: 'hi' }] };
  const answer = { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [mcpUse, mcpResult, { type: 'text', text: 'Echoed.' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 30, output_tokens: 9 } };
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) return sendJson(res, 200, answer);
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { ...mcpUse, input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"text": "hi"}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: mcpResult }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      ['content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'text', text: '' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'text_delta', text: 'Echoed.' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 2 }],
    ]);
  });
  const { client } = await liveGateway(t, upstream);
  const fields = {
    mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'docs' }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'docs', default_config: { enabled: true } }],
  };
  // The beta client: its stream assembles an mcp_tool_use block's input from its input_json_delta pieces.
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask(), betas: ['mcp-client-2025-11-20'], ...fields }) as never;
  const buffered = await client.beta.messages.create(request());
  assert.deepEqual(buffered.content, answer.content);
  assert.deepEqual(upstream.requests[0]!.body.tools, fields.tools);
  assert.equal(upstream.requests[0]!.headers['anthropic-beta'], 'mcp-client-2025-11-20');
  const streamed = await client.beta.messages.stream(request()).finalMessage();
  assert.deepEqual(streamed.content, answer.content);
  const counted = await client.beta.messages.countTokens(request());
  assert.ok(counted.input_tokens > 0);
});

test("the mock answers output_config.format (and the beta's output_format) with a JSON document valid against the schema, which the SDK's parse() reads, buffered and streamed", async (t) => {
  const { client } = await listening(t);
  const schema = { type: 'object', properties: { city: { type: 'string' }, celsius: { type: 'number' } }, required: ['city', 'celsius'], additionalProperties: false } as const;
  const format = jsonSchemaOutputFormat(schema);
  const buffered = await client.messages.parse({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask('weather as JSON'), output_config: { format } });
  assert.equal(typeof buffered.parsed_output?.city, 'string');
  assert.equal(typeof buffered.parsed_output?.celsius, 'number');
  const streamed = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask('weather as JSON'), output_config: { format } }).finalMessage();
  assert.equal(typeof streamed.parsed_output?.city, 'string');
  const beta = await client.beta.messages.parse({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    messages: ask('weather as JSON'),
    betas: ['structured-outputs-2025-11-13'],
    output_format: betaJSONSchemaOutputFormat(schema),
  });
  assert.equal(typeof beta.parsed_output?.celsius, 'number');
});

test("an upstream timeout (504) is the wire's timeout_error, the type its SDK types a 504 with (GatewayTimeoutError), buffered, streamed, and as the event: error of a stream that went quiet", async (t) => {
  const { client } = await listening(t);
  const timedOut = { type: 'error', error: { type: 'timeout_error', message: 'The upstream model provider did not answer in time.' } };
  for (const stream of [false, true]) {
    await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5-mock-timeout', max_tokens: 64, messages: ask(), stream } as never), (error: unknown) => {
      assert.ok(error instanceof Anthropic.GatewayTimeoutError, `stream ${stream}`);
      assert.equal(error.status, 504);
      assert.deepEqual(error.error, { ...timedOut, request_id: error.requestID });
      return true;
    });
  }
  // An upstream that stops sending mid-stream, past the stream's idle timeout.
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('partial').slice(0, 4));
  });
  const live = await listening(t, { MESSAGES_API_KEY: MESSAGES_KEY, MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, ''), SVC_PROVIDER_STREAM_IDLE_TIMEOUT_MS: '200' });
  await assert.rejects(live.client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).finalMessage(), (error: unknown) => {
    assert.ok(error instanceof Anthropic.APIError);
    assert.equal(error.type, 'timeout_error');
    assert.equal((error.error as { type: string }).type, 'error');
    return true;
  });
});

test("a cache hit replayed as a stream gives an mcp_tool_use block's input in input_json_delta pieces after a start with input {}, as the live stream did: the beta SDK's inputJson events and final message are the live ones", async (t) => {
  const mcpUse = { type: 'mcp_tool_use', id: 'mcptoolu_2', name: 'lookup', server_name: 'docs', input: { query: 'svc', limit: 3 } };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { ...mcpUse, input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"query": "svc", ' } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '"limit": 3}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ]),
  );
  const { client } = await liveGateway(t, upstream);
  // Asked without the MCP connector's mcp_servers and toolset, as the server_tool_use test above asks without its
  // server tool: a request with them is never stored (the provider calls the server at request time), and the replay
  // of a stored answer's blocks is the same whatever request stored it.
  const request = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask(), betas: ['mcp-client-2025-11-20'] } as never;
  const run = async () => {
    const stream = client.beta.messages.stream(request);
    const starts: unknown[] = [];
    let pieces = 0;
    stream.on('streamEvent', (event) => {
      if (event.type === 'content_block_start') starts.push(structuredClone(event.content_block));
    });
    stream.on('inputJson', () => (pieces += 1));
    const final = await stream.finalMessage();
    const { response } = await stream.withResponse();
    return { final, starts, pieces, route: response.headers.get('x-svc-route') };
  };
  const live = await run();
  assert.equal(live.route, 'live');
  assert.deepEqual(live.final.content, [mcpUse]);
  const hit = await run();
  assert.equal(hit.route, 'exact_cache');
  assert.deepEqual(hit.final.content, [mcpUse]);
  assert.deepEqual(hit.starts, [{ ...mcpUse, input: {} }]);
  assert.ok(hit.pieces > 0, 'the input came in input_json_delta pieces');
});

test("the messages wire sends its request id as request-id too, which the SDK reads (message._request_id, APIError.requestID), and in its error bodies' request_id: buffered, streamed, counted and refused", async (t) => {
  const { app, address } = await listening(t, { SVC_API_KEY: 'bootstrap-token-messages-0002' });
  const token = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: bearer('bootstrap-token-messages-0002'), payload: { name: 'sdk' } })).token;
  const client = new Anthropic({ baseURL: address, apiKey: token, maxRetries: 0 });
  const buffered = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).withResponse();
  assert.match(buffered.request_id ?? '', /^req/);
  assert.equal(buffered.request_id, buffered.response.headers.get('x-request-id'));
  const message = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  assert.match(message._request_id ?? '', /^req/);
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  await stream.finalMessage();
  const streamed = await stream.withResponse();
  assert.equal(streamed.request_id, streamed.response.headers.get('x-request-id'));
  assert.ok(streamed.request_id);
  const counted = await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: ask() }).withResponse();
  assert.equal(counted.request_id, counted.response.headers.get('x-request-id'));
  assert.ok(counted.request_id);
  // Refused by the route (a validation error), by the surface before it (a wrong key) and by the router (no route):
  // the header and the body's request_id are the same id.
  const refusals: Array<[string, () => Promise<unknown>]> = [
    ['invalid', () => client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: -1, messages: ask() })],
    ['upstream 5xx', () => client.messages.create({ model: 'claude-sonnet-4-5-mock-5xx', max_tokens: 64, messages: ask() })],
    ['unauthenticated', () => new Anthropic({ baseURL: address, apiKey: 'svc_not-a-real-key-000000000000000000000000000', maxRetries: 0 }).messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() })],
    ['no route', () => client.get('/v1/messages/nope')],
  ];
  for (const [name, call] of refusals) {
    await assert.rejects(call(), (error: unknown) => {
      assert.ok(error instanceof Anthropic.APIError, name);
      assert.ok(error.requestID, `${name}: requestID`);
      assert.equal(error.requestID, error.headers?.get('x-request-id'), name);
      assert.equal((error.error as { request_id?: unknown }).request_id, error.requestID, name);
      return true;
    });
  }
});

test("an upstream 402 (billing_error: svc's own provider account cannot pay) is svc's failure, as an upstream 401 or 403 is: 502 api_error with svc's message, buffered, streamed, and as a stream's event: error, never the caller's billing_error", async (t) => {
  let mode: 'http' | 'event' = 'http';
  const billing = { type: 'error', error: { type: 'billing_error', message: 'Your credit balance is too low to access the API.' } };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    if (mode === 'http') return sendJson(res, 402, billing);
    startSse(res);
    writeEvents(res, messageEvents('partial').slice(0, 4));
    writeEvents(res, [['error', billing]]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const stream of [false, true]) {
    await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream } as never), (error: unknown) => {
      assert.ok(error instanceof Anthropic.InternalServerError, `stream ${stream}: ${String(error)}`);
      assert.equal(error.status, 502);
      assert.equal(error.type, 'api_error');
      assert.doesNotMatch(error.message, /credit balance/);
      return true;
    });
  }
  mode = 'event';
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  const { response } = await stream.withResponse();
  const error = await stream.finalMessage().then(() => null, (thrown: unknown) => thrown);
  assert.ok(error instanceof Anthropic.APIError, String(error));
  assert.equal(error.type, 'api_error');
  assert.doesNotMatch(error.message, /credit balance/);
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.upstreamCode, 'billing_error');
});

test("an upstream's 4xx is relayed with the type the API gives its status, which the SDK's error classes go with: 409 conflict_error (ConflictError), 404 not_found_error, 413 request_too_large, and invalid_request_error for a 4xx the API has no type of its own for (422), not api_error", async (t) => {
  let status = 409;
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, status, { type: 'error', error: { type: 'invalid_request_error', message: `upstream says ${status}` } }));
  const { client } = await liveGateway(t, upstream);
  const cases: Array<[number, new (...args: never[]) => Error, string]> = [
    [409, Anthropic.ConflictError, 'conflict_error'],
    [404, Anthropic.NotFoundError, 'not_found_error'],
    [413, Anthropic.ContentTooLargeError, 'request_too_large'],
    [422, Anthropic.UnprocessableEntityError, 'invalid_request_error'],
    [400, Anthropic.BadRequestError, 'invalid_request_error'],
  ];
  for (const [answered, errorClass, type] of cases) {
    status = answered;
    for (const stream of [false, true]) {
      await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), stream } as never), (error: unknown) => {
        assert.ok(error instanceof errorClass, `${answered} stream ${stream}: ${String(error)}`);
        assert.ok(error instanceof Anthropic.APIError);
        assert.equal(error.status, answered);
        assert.equal(error.type, type, `${answered}`);
        assert.match(error.message, new RegExp(`upstream says ${answered}`));
        return true;
      });
    }
  }
});

test("tool search: a catalogue of 2,000 defer_loading tools beside a tool search tool reaches the upstream as sent, a deferred tool's call is checked against its schema, and the mock calls only tools not deferred; more than 128 tools not deferred, or 10,000 in all, are still a 400", async (t) => {
  const deferred = Array.from({ length: 2_000 }, (_, i) => ({
    name: `crm_tool_${i}`,
    description: `CRM operation number ${i}`,
    input_schema: { type: 'object' as const, properties: { id: { type: 'integer' } }, required: ['id'] },
    defer_loading: true,
  }));
  const search = { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' };
  const tools = [search, ...deferred, WEATHER] as never[];
  let input: unknown = { id: 42 };
  const upstream = await startFakeUpstream(t, (_req, res) =>
    streamMessage(res, [
      ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'server_tool_use', id: 'srvtoolu_1', name: 'tool_search_tool_regex', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"pattern":"crm_tool_42"}' } }],
      ['content_block_stop', { type: 'content_block_stop', index: 0 }],
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_search_tool_result', tool_use_id: 'srvtoolu_1', content: { type: 'tool_search_tool_search_result', tool_references: [{ type: 'tool_reference', tool_name: 'crm_tool_42' }] } } }],
      ['content_block_stop', { type: 'content_block_stop', index: 1 }],
      ['content_block_start', { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_crm', name: 'crm_tool_42', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } }],
      ['content_block_stop', { type: 'content_block_stop', index: 2 }],
    ]),
  );
  const { client, address } = await liveGateway(t, upstream);
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask('find the CRM record'), tools }) as never;
  const final = await client.messages.stream(request()).finalMessage();
  assert.deepEqual(final.content[2], { type: 'tool_use', id: 'toolu_crm', name: 'crm_tool_42', input: { id: 42 } });
  assert.equal(final.content[1]!.type, 'tool_search_tool_result');
  assert.deepEqual(upstream.requests[0]!.body.tools, tools);
  // A deferred tool's call is checked as any other: input off its schema is refused.
  input = { id: 'forty-two' };
  await assert.rejects(client.messages.stream(request()).finalMessage(), /do not match its schema/);
  // count_tokens counts the tools in context, not the deferred catalogue (which is not in the model's context).
  const counted = await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: ask(), tools } as never);
  const small = await client.messages.countTokens({ model: 'claude-sonnet-4-5', messages: ask(), tools: [search, WEATHER] } as never);
  assert.ok(counted.input_tokens < small.input_tokens + 100, `${counted.input_tokens} vs ${small.input_tokens}`);

  // The mock calls a tool the model has in context, not a deferred one listed first.
  const mock = await listening(t);
  const mocked = await mock.client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask(), tools: [search, ...deferred, WEATHER], tool_choice: { type: 'any' } } as never);
  assert.deepEqual(mocked.content.filter((block) => block.type === 'tool_use').map((block) => (block as { name: string }).name), ['get_weather']);

  // The CPU bounds stay: 129 tools not deferred, or more than 10,000 in all, are a messages-shaped 400 with no upstream call.
  const eager = deferred.slice(0, 129).map(({ defer_loading: _, ...tool }) => tool);
  const many = Array.from({ length: 10_001 }, (_, i) => ({ ...deferred[0]!, name: `t${i}` }));
  const before = upstream.requests.length;
  for (const [label, list] of [['129 not deferred', eager], ['10,001 tools', [WEATHER, ...many]]] as const) {
    const response = await fetch(`${address}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: ask(), tools: list }),
    });
    assert.equal(response.status, 400, label);
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, 'invalid_request_error', label);
    assert.match(body.error.message, /tools/, label);
  }
  assert.equal(upstream.requests.length, before);
});

test('live messages stream: an upstream that ends mid tool_use input (no content_block_stop, no message_stop) ends the stream with an error event after the blocks before it; the held tool_use never reaches the SDK, whose stream rejects', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    const [start, textStart, , textDelta, textStop] = messageEvents('Looking it up.');
    startSse(res);
    writeEvents(res, [
      start!, textStart!, textDelta!, textStop!,
      ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_cut', name: 'get_weather', input: {} } }],
      ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Li' } }],
    ]);
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), tools: [WEATHER] });
  const events: string[] = [];
  let pieces = '';
  stream.on('streamEvent', (event) => events.push(event.type));
  stream.on('inputJson', (piece) => (pieces += piece));
  const { response } = await stream.withResponse();
  await assert.rejects(stream.finalMessage(), (error: unknown) => error instanceof Anthropic.APIError && /api_error/.test(error.message));
  assert.deepEqual(events, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop']);
  assert.equal(pieces, '');
  const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'bad_response');
});

test("the mock's usage.input_tokens is the wire's own count of the request, count_tokens': an image and a PDF document count, buffered and streamed, in the SDK's message and the run", async (t) => {
  const { client, app } = await listening(t);
  const request = () => ({
    model: 'claude-sonnet-4-5',
    system: 'Describe what you are shown.',
    messages: [
      {
        role: 'user' as const,
        content: [
          { type: 'image' as const, source: { type: 'url' as const, url: 'https://example.com/cat.png' } },
          { type: 'document' as const, source: { type: 'url' as const, url: 'https://example.com/report.pdf' } },
          { type: 'text' as const, text: ask('What is in them?')[0]!.content },
        ],
      },
    ],
    tools: [WEATHER],
    tool_choice: { type: 'none' as const },
  });
  const answers: Array<[string, { data: Anthropic.Message; response: Response }, number]> = [];
  const buffered = request();
  answers.push(['buffered', await client.messages.create({ ...buffered, max_tokens: 64 }).withResponse(), (await client.messages.countTokens(buffered)).input_tokens]);
  const streamed = request();
  const stream = client.messages.stream({ ...streamed, max_tokens: 64 });
  answers.push(['streamed', { data: await stream.finalMessage(), response: (await stream.withResponse()).response }, (await client.messages.countTokens(streamed)).input_tokens]);
  for (const [label, { data, response }, counted] of answers) {
    assert.ok(counted > 3_200, label); // the image and the document, 1,600 each
    assert.equal(data.usage.input_tokens, counted, label);
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.usage.promptTokens, counted, label);
  }
});

test('the mock thinks when thinking is enabled: a thinking block with a signature leads its answer, buffered and streamed (the SDK\'s thinking and signature events), empty with display omitted, its tokens in the output; none otherwise', async (t) => {
  const { client } = await listening(t);
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
  const buffered = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking, messages: ask('think first') });
  const [first, second] = buffered.content;
  assert.ok(first?.type === 'thinking' && first.thinking.length > 0 && first.signature.length > 0, JSON.stringify(first));
  assert.equal(second?.type, 'text');
  const unthinking = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, messages: ask('think first') });
  assert.ok(buffered.usage.output_tokens > unthinking.usage.output_tokens);

  const stream = client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking, tools: [WEATHER], messages: ask('weather in Oslo?') });
  let thought = '';
  let signature = '';
  stream.on('thinking', (delta) => (thought += delta));
  stream.on('signature', (sent) => (signature = sent));
  const streamed = await stream.finalMessage();
  assert.deepEqual(streamed.content.map((block) => block.type), ['thinking', 'tool_use']);
  const block = streamed.content[0]!;
  assert.ok(block.type === 'thinking' && block.thinking === thought && block.signature === signature && signature !== '');

  // The thinking block goes back with the tool result, as the API asks of a client, and the mock answers from it.
  const toolUse = streamed.content[1] as Anthropic.ToolUseBlock;
  const next = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 2048,
    thinking,
    tools: [WEATHER],
    messages: [
      ...ask('weather in Oslo?'),
      { role: 'assistant', content: streamed.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: 'sunny' }] },
    ],
  });
  assert.equal(next.content.at(-1)!.type, 'text');

  const omitted = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { ...thinking, display: 'omitted' } as never, messages: ask('think quietly') });
  assert.ok(omitted.content[0]!.type === 'thinking' && omitted.content[0].thinking === '' && omitted.content[0].signature !== '');
  for (const off of [undefined, { type: 'disabled' as const }]) {
    const plain = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, ...(off ? { thinking: off } : {}), messages: ask('no thinking') });
    assert.ok(plain.content.every((block) => block.type !== 'thinking'));
  }
});

test('the mock\'s thinking with display omitted is billed as the provider bills hidden thinking: its output tokens are those of the same answer displayed, the text still empty, buffered and streamed', async (t) => {
  const { client } = await listening(t);
  const messages = ask('think quietly');
  const thinking = { type: 'enabled' as const, budget_tokens: 1024 };
  const shown = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, thinking, messages });
  const plain = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 2048, messages });
  assert.ok(shown.usage.output_tokens > plain.usage.output_tokens);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 2048, thinking: { ...thinking, display: 'omitted' } as never, messages };
  for (const omitted of [await client.messages.create(request), await client.messages.stream(request).finalMessage()]) {
    const block = omitted.content[0]!;
    assert.ok(block.type === 'thinking' && block.thinking === '' && block.signature !== '', JSON.stringify(block));
    assert.equal(omitted.usage.output_tokens, shown.usage.output_tokens, 'hidden thinking is billed as shown thinking is');
  }
});

test('the mock connects to no MCP server and runs no container: mcp_servers or container is a 400 naming the field, buffered and streamed, never a text answer as if they had been used (the official client)', async (t) => {
  const { client } = await listening(t);
  const asks = [
    { field: 'mcp_servers', extra: { mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'docs' }], tools: [{ type: 'mcp_toolset', mcp_server_name: 'docs' }] } },
    { field: 'container', extra: { container: 'container_011CZ' } },
  ];
  for (const { field, extra } of asks) {
    for (const stream of [false, true]) {
      const request = { model: 'claude-sonnet-4-5', max_tokens: 256, messages: ask(), betas: ['mcp-client-2025-11-20'], ...extra } as never;
      const answer = stream ? client.beta.messages.stream(request).finalMessage() : client.beta.messages.create(request);
      const error = await answer.then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof Anthropic.BadRequestError, `${field}, stream: ${stream}: answered instead of refused`);
      assert.match(error.message, new RegExp(field));
    }
  }
  // A server tool is still called as the docs describe (a server_tool_use block, no result), not refused.
  const searched = await client.messages.create({
    model: 'claude-sonnet-4-5',
    max_tokens: 256,
    messages: ask(),
    tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    tool_choice: { type: 'tool', name: 'web_search' },
  });
  assert.equal(searched.content[0]!.type, 'server_tool_use');
});

test("an mcp_toolset tool naming no server of the request's mcp_servers is a 400 invalid_request_error naming tools[i].mcp_server_name before any run, as the provider refuses it, never a text answer without the toolset (the official client, buffered, streamed, count_tokens)", async (t) => {
  const { client, app } = await listening(t);
  const asks = [
    { label: 'no mcp_servers', extra: { tools: [WEATHER, { type: 'mcp_toolset', mcp_server_name: 'docs' }] } },
    { label: 'another server', extra: { mcp_servers: [{ type: 'url', url: 'https://mcp.example/sse', name: 'wiki' }], tools: [WEATHER, { type: 'mcp_toolset', mcp_server_name: 'docs' }] } },
  ];
  for (const { label, extra } of asks) {
    const fields = { model: 'claude-sonnet-4-5', messages: ask(), betas: ['mcp-client-2025-11-20'], tool_choice: { type: 'none' }, ...extra };
    const answers = [
      () => client.beta.messages.create({ ...fields, max_tokens: 256 } as never),
      () => client.beta.messages.stream({ ...fields, max_tokens: 256 } as never).finalMessage(),
      () => client.beta.messages.countTokens(fields as never),
    ];
    for (const [index, answer] of answers.entries()) {
      const error = await Promise.resolve(answer()).then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof Anthropic.BadRequestError, `${label} (#${index}): answered instead of refused`);
      const { type, message } = (error.error as { error: { type: string; message: string } }).error;
      assert.equal(type, 'invalid_request_error');
      assert.match(message, /^tools\[1\]\.mcp_server_name: "docs" names no server of mcp_servers/);
    }
  }
  const runs = json(await app.inject({ url: '/api/v1/runs', headers: bearer('sk-local-dev') })).runs;
  assert.equal(runs.length, 0, 'a refusal before the run records none');
});

test('a structured-output schema that does not compile (output_config.format, the beta\'s output_format) is a 400 naming it before any run, as chat\'s response_format and responses\' text.format are (the official client)', async (t) => {
  const { client, app } = await listening(t);
  const bad = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { type: 'nope' } } };
  const asks = [
    { where: 'output_config.format.schema', create: () => client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), output_config: { format: { type: 'json_schema', schema: bad } } } as never) },
    // The beta client sends its output_format as output_config.format: the beta's own field, as older clients send it.
    { where: 'output_format.schema', create: () => client.post('/v1/messages', { body: { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), output_format: { type: 'json_schema', schema: bad } } }) },
  ];
  for (const { where, create } of asks) {
    const error = await Promise.resolve(create()).then(
      () => null,
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof Anthropic.BadRequestError, `${where}: answered instead of refused`);
    assert.match(error.message, new RegExp(`${where.replaceAll('.', '\\.')} is not a valid JSON Schema`));
  }
  const runs = json(await app.inject({ url: '/api/v1/runs', headers: bearer('sk-local-dev') })).runs;
  assert.equal(runs.length, 0, 'a refusal before the run records none');
  // A schema that compiles is answered.
  const answered = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), output_config: { format: { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'string' } } } } } } as never);
  assert.equal((answered as { type: string }).type, 'message');
});

test('an image or document by url is relayed as sent, never fetched by svc: the mock and count_tokens read none of it (a loopback address included), a live upstream gets the url', async (t) => {
  // The host the sources name: a fetch of them by svc would be recorded here.
  const host = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, {}));
  const content = (text: string) => [
    { type: 'image' as const, source: { type: 'url' as const, url: `${host.baseUrl}/cat.png` } },
    { type: 'document' as const, source: { type: 'url' as const, url: `${host.baseUrl}/report.pdf` } },
    { type: 'text' as const, text },
  ];
  const { client } = await listening(t);
  const mocked = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user' as const, content: content(ask('what is this?')[0]!.content) }] };
  assert.equal((await client.messages.create(mocked)).type, 'message');
  assert.equal((await client.messages.stream({ ...mocked, messages: [{ role: 'user', content: content(ask('and this?')[0]!.content) }] }).finalMessage()).type, 'message');
  assert.ok((await client.messages.countTokens({ model: mocked.model, messages: mocked.messages })).input_tokens > 3_200);

  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'a cat' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3300, output_tokens: 2 } }),
  );
  const live = await liveGateway(t, upstream);
  const sent = content(ask('what is this?')[0]!.content);
  await live.client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: sent }] });
  assert.deepEqual(upstream.requests[0]!.body.messages[0].content, sent);
  assert.deepEqual(host.requests, [], 'svc fetched a url source');
});

test('live: system blocks with cache_control, metadata.user_id, service_tier and beta tokens svc does not know reach the upstream as the SDK sent them', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('ok'));
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const system = [
    { type: 'text' as const, text: 'You answer briefly.' },
    { type: 'text' as const, text: 'A long shared preamble.', cache_control: { type: 'ephemeral' as const, ttl: '1h' as const } },
  ];
  const final = await client.beta.messages
    .stream({ model: 'claude-sonnet-4-5', max_tokens: 64, system, metadata: { user_id: 'user-7f3a' }, service_tier: 'standard_only', messages: ask(), betas: ['a-beta-from-2099-01-01', 'context-management-2025-06-27'] })
    .finalMessage();
  assert.equal((final.content[0] as { text: string }).text, 'ok');
  const sent = upstream.requests[0]!;
  assert.deepEqual(sent.body.system, system);
  assert.deepEqual(sent.body.metadata, { user_id: 'user-7f3a' });
  assert.equal(sent.body.service_tier, 'standard_only');
  assert.equal(sent.headers['anthropic-beta'], 'a-beta-from-2099-01-01,context-management-2025-06-27');
  assert.equal(sent.body.betas, undefined);
});

test('live: a redacted_thinking block reaches the SDK as the upstream sent it, buffered, streamed and from the cache; with pause_turn or refusal too, those answers not stored (docs/gateway.md)', async (t) => {
  let stopReason = 'end_turn';
  const thinkingBlocks: Array<[string, unknown]> = [
    ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 0 }],
    ['content_block_start', { type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }],
    ['content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Answered.' } }],
    ['content_block_stop', { type: 'content_block_stop', index: 1 }],
  ];
  const expected = [{ type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' }, { type: 'text', text: 'Answered.' }];
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: expected, stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } });
    const [start, , , , , delta, stop] = messageEvents('unused');
    startSse(res);
    writeEvents(res, [start!, ...thinkingBlocks, ['message_delta', { ...(delta![1] as object), delta: { stop_reason: stopReason, stop_sequence: null } }], stop!]);
    res.end();
  });
  const { client } = await liveGateway(t, upstream);
  const answer = async (params: Anthropic.MessageCreateParamsNonStreaming, stream: boolean) => {
    if (!stream) return client.messages.create(params).withResponse();
    const streamed = client.messages.stream(params);
    return { data: await streamed.finalMessage(), response: (await streamed.withResponse()).response };
  };
  for (const [reason, again] of [['end_turn', 'exact_cache'], ['pause_turn', 'live'], ['refusal', 'live']] as const) {
    stopReason = reason;
    for (const stream of [false, true]) {
      const label = `${reason} ${stream ? 'streamed' : 'buffered'}`;
      const params = { model: 'claude-sonnet-4-5', max_tokens: 4096, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: ask() };
      for (const route of ['live', again]) {
        const { data, response } = await answer(params, stream);
        assert.equal(response.headers.get('x-svc-route'), route, label);
        assert.deepEqual(data.content, expected, label);
        assert.equal(data.stop_reason, reason, label);
      }
    }
  }
});

test("the SDK's retries go through svc: an upstream 429 with retry-after, and a 529 before a stream started, are retried by the SDK and its next attempt answered; each attempt is its own run", async (t) => {
  let failNext: number | null = null;
  const upstream = await startFakeUpstream(t, (req, res) => {
    const status = failNext;
    failNext = null;
    if (status !== null) {
      const type = status === 429 ? 'rate_limit_error' : 'overloaded_error';
      return sendJson(res, status, { type: 'error', error: { type, message: 'Busy' } }, { 'retry-after': '1' });
    }
    if (!req.body.stream) return sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'second try' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 2 } });
    startSse(res);
    writeEvents(res, messageEvents('second try'));
    res.end();
  });
  const { address, app } = await liveGateway(t, upstream);
  const client = new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 1 });
  failNext = 429;
  const buffered = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() });
  assert.equal((buffered.content[0] as { text: string }).text, 'second try');
  failNext = 529;
  const streamed = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask() }).finalText();
  assert.equal(streamed, 'second try');
  assert.equal(upstream.requests.length, 4);
  const runs = json(await app.inject({ url: '/api/v1/runs' })).runs.map((run: { status: string }) => run.status);
  assert.deepEqual(runs, ['completed', 'failed', 'completed', 'failed']);
});

test("a service_tier the provider does not take (its SDK's auto and standard_only) is a 400 invalid_request_error naming it before any run, as the chat and responses wires refuse theirs, never sent upstream; the provider's two are answered (the official client, buffered and streamed)", async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    writeEvents(res, messageEvents('ok'));
    res.end();
  });
  const { client, app } = await liveGateway(t, upstream);
  for (const service_tier of ['priority', 'default', 'Auto', '']) {
    for (const stream of [false, true]) {
      const request = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), service_tier } as never;
      const answer = stream ? client.messages.stream(request).finalMessage() : client.messages.create(request);
      const error = await Promise.resolve(answer).then(
        () => null,
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof Anthropic.BadRequestError, `${JSON.stringify(service_tier)}, stream: ${stream}: answered instead of refused`);
      const { type, message } = (error.error as { error: { type: string; message: string } }).error;
      assert.equal(type, 'invalid_request_error');
      assert.match(message, /service_tier/);
    }
  }
  assert.equal(upstream.requests.length, 0, 'a refused service_tier went upstream');
  const runs = json(await app.inject({ url: '/api/v1/runs', headers: bearer('sk-local-dev') })).runs;
  assert.equal(runs.length, 0, 'a refusal before the run records none');
  for (const service_tier of ['auto', 'standard_only'] as const) {
    const final = await client.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: ask(), service_tier }).finalMessage();
    assert.equal((final.content[0] as { text: string }).text, 'ok', service_tier);
  }
  assert.deepEqual(upstream.requests.map((sent) => sent.body.service_tier), ['auto', 'standard_only']);
});

test("a tool's input_schema with properties or required null (the SDKs type both nullable: none) is taken: the mock calls it, count_tokens counts it, a live upstream gets it as sent and its tool_use is checked against the rest of the schema; it was a 400 'properties must be object'", async (t) => {
  const now = { name: 'now', description: 'The time now', input_schema: { type: 'object' as const, properties: null, required: null } };
  const lookup = { name: 'lookup', description: 'Look a word up', input_schema: { type: 'object' as const, properties: { word: { type: 'string' } }, required: null } };
  const mock = await listening(t);
  for (const stream of [false, true]) {
    for (const tool of [now, lookup]) {
      const request = { model: 'claude-sonnet-4-5', max_tokens: 256, tools: [tool], tool_choice: { type: 'tool' as const, name: tool.name }, messages: ask() };
      const answer = stream ? await mock.client.messages.stream(request).finalMessage() : await mock.client.messages.create(request);
      assert.equal(answer.stop_reason, 'tool_use', `${tool.name}, stream: ${stream}`);
      assert.deepEqual(answer.content.map((block) => block.type === 'tool_use' && block.name), [tool.name]);
    }
  }
  const counted = await mock.client.messages.countTokens({ model: 'claude-sonnet-4-5', tools: [now, lookup], messages: ask() });
  assert.ok(counted.input_tokens > 0);

  // Live: the schema goes upstream as the SDK sent it, and the answer's calls are checked against what it does say.
  const upstream = await startFakeUpstream(t, (request, res) => {
    const input = request.body.tools[0].name === 'lookup' ? { word: 7 } : {};
    sendJson(res, 200, { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'tool_use', id: 'toolu_up', name: request.body.tools[0].name, input }], stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } });
  });
  const { client, app } = await liveGateway(t, upstream);
  const called = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, tools: [now], messages: ask() });
  assert.deepEqual(called.content, [{ type: 'tool_use', id: 'toolu_up', name: 'now', input: {} }]);
  assert.deepEqual(upstream.requests[0]!.body.tools[0].input_schema, { type: 'object', properties: null, required: null });
  // A word that is not a string is refused (a 502, the run failed as an invalid tool call), required null or not.
  await assert.rejects(client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, tools: [lookup], messages: ask() }), (error: unknown) => error instanceof Anthropic.InternalServerError && error.status === 502);
  const [refused] = await finishedRuns(app);
  assert.equal(refused.status, 'failed');
  assert.match(JSON.stringify(refused.error), /lookup/);
});
