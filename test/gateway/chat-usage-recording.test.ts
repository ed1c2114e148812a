/**
 * The usage a chat-completions run records, and what its client and a later cache hit get of it, when the upstream's
 * answer is refused or its usage is missing or not token counts (docs/gateway.md, "Cost" and "Exact-response cache").
 * Driven through the official `openai` client against a listening svc whose live provider is a fake upstream.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { json } from '../support/build.ts';
import { completion as completionOf, contentChunk, sendChunks, sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { holdLongTimers } from '../support/long-timers.ts';
import { finishedRun } from '../support/finished-runs.ts';
import { costOf } from '../../src/gateway/pricing.ts';
import { countTokens } from '../../src/gateway/tokens.ts';

let counter = 0;
const unique = (text: string) => `${text} #${++counter} ${process.hrtime.bigint()}`;

const WEATHER_TOOL = {
  type: 'function' as const,
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false } },
};

const UPSTREAM_USAGE = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 };

/** Streams a weather question through the gateway, sees the SDK refuse the tool call svc refused, and reads its run. */
async function refusedToolCallRun({ client, app }: Awaited<ReturnType<typeof openaiGateway>>) {
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('weather') }], tools: [WEATHER_TOOL], stream: true })
    .withResponse();
  await assert.rejects(async () => {
    for await (const _chunk of stream);
  }, /Invalid tool call/);
  return finishedRun(app, response.headers.get('x-svc-run-id'));
}

test('a chat stream refused for its tool call at the finish chunk records the usage chunk that follows it', async (t) => {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ ...contentChunk(''), choices, ...extra });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      chunk([{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"town":"Oslo"}' } }] }, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]),
      chunk([], { usage: UPSTREAM_USAGE }),
    ]),
  );
  const { run, attempts } = await refusedToolCallRun(await openaiGateway(t, upstream));
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'invalid_tool_call');
  assert.deepEqual(run.usage, { promptTokens: 1200, completionTokens: 300, totalTokens: 1500 });
  assert.equal(attempts[0].costUsd, costOf('gpt-4o-mini', { promptTokens: 1200, completionTokens: 300 }, false).usd);
  assert.equal(run.priced, true);
});

test("a chat stream refused for its tool call with no usage chunk after it records the refused call's text in its output estimate, at the finish chunk and when the next call starts", async (t) => {
  const chunk = (choices: unknown[]) => ({ ...contentChunk(''), choices });
  const content = 'Let me look that up for you. ';
  const refusedArguments = `{"town":"${'Oslo and the fjords around it, '.repeat(20)}"}`;
  const call = (index: number, args: string) => ({ index, id: `call_${index}`, type: 'function', function: { name: 'get_weather', arguments: args } });
  const endings: Record<string, unknown[]> = {
    'at the finish chunk': [chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }])],
    'when the next call starts': [chunk([{ index: 0, delta: { tool_calls: [call(1, '{"city":"Bergen"}')] }, finish_reason: null }])],
  };
  let ending: unknown[] = [];
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      chunk([{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }]),
      chunk([{ index: 0, delta: { tool_calls: [call(0, refusedArguments.slice(0, 40))] }, finish_reason: null }]),
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: refusedArguments.slice(40) } }] }, finish_reason: null }]),
      ...ending,
    ]),
  );
  const gateway = await openaiGateway(t, upstream);
  for (const [label, chunks] of Object.entries(endings)) {
    ending = chunks;
    const { run } = await refusedToolCallRun(gateway);
    assert.equal(run.error.kind, 'invalid_tool_call', label);
    // When the next call starts, its fragment (which made svc refuse the one before) is text the model produced too.
    const refusing = label === 'when the next call starts' ? 'get_weather{"city":"Bergen"}' : '';
    assert.equal(run.usage.completionTokens, countTokens(content + 'get_weather' + refusedArguments + refusing), label);
  }
});

test('a chat stream refused for its tool call with no usage within its trailing events counts in its output estimate the fragment that refused it and the fragments that arrive after, for a call already sent and for the next call', async (t) => {
  const chunk = (choices: unknown[]) => ({ ...contentChunk(''), choices });
  const fragment = (index: number, args: string, name?: string) => chunk([{ index: 0, delta: { tool_calls: [{ index, ...(name ? { id: `call_${index}`, type: 'function' } : {}), function: { ...(name ? { name } : {}), arguments: args } }] }, finish_reason: null }]);
  const content = 'Let me look that up for you. ';
  const more = ` and the towns along the coast north of it, ${'fjord by fjord, '.repeat(20)}"}`;
  const cases: Record<string, { chunks: unknown[]; text: string }> = {
    // Oslo's call is sent when the next one starts; a fragment adding to it afterwards is refused.
    'after the call was sent': {
      chunks: [fragment(0, '{"city":"Oslo"}', 'get_weather'), fragment(1, '{"city":', 'get_weather'), fragment(0, '{"city":"Bergen'), fragment(0, more)],
      text: 'get_weather{"city":"Oslo"}' + 'get_weather{"city":' + '{"city":"Bergen' + more,
    },
    // Oslo's call is whole JSON failing its schema, refused when the next call starts; that call goes on.
    'when the next call starts': {
      chunks: [fragment(0, '{"town":"Oslo"}', 'get_weather'), fragment(1, '{"city":"Bergen', 'get_weather'), fragment(1, more)],
      text: 'get_weather{"town":"Oslo"}' + 'get_weather{"city":"Bergen' + more,
    },
  };
  let chunks: unknown[] = [];
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      chunk([{ index: 0, delta: { role: 'assistant', content }, finish_reason: null }]),
      ...chunks,
      chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]),
      chunk([{ index: 0, delta: {}, finish_reason: null }]),
      { ...chunk([]), usage: UPSTREAM_USAGE },
    ]),
  );
  const gateway = await openaiGateway(t, upstream);
  for (const [label, streamed] of Object.entries(cases)) {
    chunks = streamed.chunks;
    const { run } = await refusedToolCallRun(gateway);
    assert.equal(run.error.kind, 'invalid_tool_call', label);
    assert.equal(run.usage.completionTokens, countTokens(content + streamed.text), label);
  }
});

test('a chat stream refused for its tool call whose upstream then stalls (no usage chunk, the connection held open) gets its error without svc waiting on the upstream, its run recorded first with the estimate', async (t) => {
  const chunk = (choices: unknown[]) => ({ ...contentChunk(''), choices });
  const refused = chunk([{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"town":"Oslo"}' } }] }, finish_reason: null }]);
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(refused)}\n\n`);
    res.write(`data: ${JSON.stringify(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]))}\n\n`);
    // No usage chunk and no end: the connection stays open until the test ends.
  });
  const gateway = await openaiGateway(t, upstream);
  // svc's time bounds held: the client's error must come without svc waiting on the upstream (holdLongTimers).
  const restoreTimers = holdLongTimers(t);
  const { data: stream, response } = await gateway.client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('weather') }], tools: [WEATHER_TOOL], stream: true })
    .withResponse();
  await assert.rejects(async () => {
    for await (const _chunk of stream);
  }, /Invalid tool call/);
  restoreTimers();
  // The error event went out after the run was recorded (gateway-reply): it is failed already.
  const detail = json(await gateway.app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` }));
  assert.equal(detail.run.status, 'failed');
  assert.equal(detail.run.error.kind, 'invalid_tool_call');
  assert.equal(detail.run.usage.completionTokens, countTokens('get_weather{"town":"Oslo"}'));
  assert.ok(detail.events.some((event: { type: string }) => event.type === 'usage.estimated'));
  assert.equal(upstream.requests.length, 1);
});

test('a buffered chat answer refused as bad_response (a choice without a message) records the usage it reported', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'chatcmpl-x', object: 'chat.completion', created: 1700000000, model: 'gpt-4o-mini', choices: [{ index: 0, finish_reason: 'stop' }], usage: UPSTREAM_USAGE }),
  );
  const { client, app } = await openaiGateway(t, upstream);
  const failure = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('no message') }] }).catch((error: unknown) => error);
  assert.ok(failure instanceof OpenAI.APIError);
  assert.equal(failure.status, 502);
  const { run, attempts } = await finishedRun(app, failure.headers?.get('x-svc-run-id') ?? null);
  assert.equal(run.error.kind, 'bad_response');
  assert.deepEqual(run.usage, { promptTokens: 1200, completionTokens: 300, totalTokens: 1500 });
  assert.equal(attempts[0].costUsd, costOf('gpt-4o-mini', { promptTokens: 1200, completionTokens: 300 }, false).usd);
  assert.equal(run.priced, true, 'the usage the upstream reported is what it billed');
});

/** The recorded usage as the chat-completions wire writes it. */
const wireUsage = (usage: { promptTokens: number; completionTokens: number; totalTokens: number }) => ({
  prompt_tokens: usage.promptTokens,
  completion_tokens: usage.completionTokens,
  total_tokens: usage.totalTokens,
});

test('a usage that is not token counts reaches the client as the usage svc recorded, buffered and streamed', async (t) => {
  let junk: unknown = 5;
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (req.body.stream !== true) return sendJson(res, 200, { ...completionOf('Oslo.'), usage: junk });
    sendChunks(res, [
      { ...contentChunk('Oslo is the capital.'), choices: [{ index: 0, delta: { content: 'Oslo is the capital.' }, finish_reason: 'stop' }] },
      { ...contentChunk(''), choices: [], usage: junk },
    ]);
  });
  const { client, app } = await openaiGateway(t, upstream);
  for (const reported of [5, { prompt_tokens: 'x', completion_tokens: 3, total_tokens: 'y' }]) {
    junk = reported;
    const { data: answer, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('capital') }] }).withResponse();
    const buffered = await finishedRun(app, response.headers.get('x-svc-run-id'));
    assert.deepEqual(answer.usage, wireUsage(buffered.run.usage), `buffered, usage ${JSON.stringify(reported)}`);

    const { data: stream, response: streamed } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('capital') }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const usages: unknown[] = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    const { run } = await finishedRun(app, streamed.headers.get('x-svc-run-id'));
    assert.deepEqual(usages, [wireUsage(run.usage)], `streamed, usage ${JSON.stringify(reported)}`);
    if (typeof reported === 'object') assert.equal(run.usage.completionTokens, 3, 'a count that is one is kept');
  }
});

test('a streamed answer from an upstream that sends no usage chunk: the live run, its client and later hits all have the estimate', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      contentChunk('Oslo is '),
      { ...contentChunk('the capital of Norway.'), choices: [{ index: 0, delta: { content: 'the capital of Norway.' }, finish_reason: 'stop' }] },
    ]),
  );
  const { client, app } = await openaiGateway(t, upstream);
  const messages = [{ role: 'user' as const, content: unique('capital of Norway') }];
  const streamed = async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const usages: unknown[] = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    return { usages, detail: await finishedRun(app, response.headers.get('x-svc-run-id')) };
  };

  const live = await streamed();
  assert.equal(live.detail.run.route, 'live');
  const estimate = live.detail.run.usage;
  assert.ok(estimate.promptTokens > 0 && estimate.completionTokens > 0);
  assert.deepEqual(live.usages, [wireUsage(estimate)], 'the client asked for usage: it gets the usage the run records');

  const hit = await streamed();
  assert.equal(hit.detail.run.route, 'exact_cache');
  assert.deepEqual(hit.detail.run.usage, estimate, 'a hit records the usage the live run recorded');
  assert.deepEqual(hit.usages, [wireUsage(estimate)]);

  const { data: answer, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
  const buffered = await finishedRun(app, response.headers.get('x-svc-run-id'));
  assert.equal(buffered.run.route, 'exact_cache');
  assert.deepEqual(buffered.run.usage, estimate);
  assert.deepEqual(answer.usage, wireUsage(estimate));
});
