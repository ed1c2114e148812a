/**
 * An exact-cache hit of a streamed chat answer, as the official `openai` client's stream accumulator
 * (`finalChatCompletion()`) makes it: equal to what it made of the live stream, but for the id and `created` a hit
 * has of its own, buffered or streamed. The upstream is a fake one started by the test, streaming what Azure OpenAI and
 * other providers add to OpenAI's chunks; what svc emits is checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { MAX_WHOLE_FIELD_CHARS } from '../../src/gateway/stream-assembler.ts';
import { sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';



type Params = Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'stream'>;

/**
 * The SDK's accumulation of one streamed answer, with the route svc answered it by; each chunk is checked against the
 * OpenAPI document when svc made it (a hit) rather than relayed it.
 */
async function streamed(client: OpenAI, params: Params): Promise<{ final: ChatCompletion; route: string | null }> {
  const { data, response } = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }).withResponse();
  const route = response.headers.get('x-svc-route');
  const accumulator = ChatCompletionStream.fromReadableStream(data.toReadableStream());
  const chunks: unknown[] = [];
  accumulator.on('chunk', (chunk) => chunks.push(chunk));
  const final = await accumulator.finalChatCompletion();
  if (route === 'exact_cache') for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
  return { final, route };
}

/**
 * An answer without what a hit has of its own (a new id and `created`, by design) and without the `parsed: null` the
 * SDK adds to each message it accumulates (a buffered answer has none).
 */
function answerOf(completion: ChatCompletion): Record<string, unknown> {
  const { id: _id, created: _created, choices, ...rest } = completion as unknown as Record<string, unknown> & ChatCompletion;
  return {
    ...rest,
    choices: choices.map(({ message, ...choice }) => {
      const { parsed, ...fields } = message as unknown as Record<string, unknown>;
      return { ...choice, message: parsed === null || parsed === undefined ? fields : { ...fields, parsed } };
    }),
  };
}

const filters = (severity: string) => ({
  hate: { filtered: false, severity },
  self_harm: { filtered: false, severity: 'safe' },
  sexual: { filtered: false, severity: 'safe' },
  violence: { filtered: false, severity: 'safe' },
});
const PROMPT_FILTERS = [{ prompt_index: 0, content_filter_results: { ...filters('safe'), jailbreak: { filtered: false, detected: false } } }];
const CITATIONS = ['https://example.com/oslo', 'https://example.com/norway'];
const MODERATION = {
  input: { type: 'moderation_results', model: 'omni-moderation-latest', results: [] },
  output: { type: 'error', code: 'moderation_timeout', message: 'Output moderation timed out.' },
};
const REASONING = [{ type: 'reasoning.encrypted', data: 'gAAAAABo-opaque', id: 'rs_1', format: 'openai-responses-v1', index: 0 }];

/**
 * An answer streamed as Azure OpenAI streams it, with what other providers add: a first chunk with no choices and the
 * prompt's filter results (and Azure's empty id, model and object), each choice's filter results on its chunks (the
 * last ones differ), a provider's citations on every chunk, a moderation chunk, an encrypted reasoning block in one
 * delta and a provider's own finish reason.
 */
function azureChunks(): unknown[] {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: 'chatcmpl-azure',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-2024-08-06',
    system_fingerprint: 'fp_azure',
    citations: CITATIONS,
    choices,
    ...extra,
  });
  const choice = (delta: Record<string, unknown>, fields: Record<string, unknown>, finish: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason: finish, ...fields });
  return [
    { id: '', object: '', created: 0, model: '', choices: [], prompt_filter_results: PROMPT_FILTERS },
    chunk([choice({ role: 'assistant', content: '', refusal: null }, { content_filter_results: {}, native_finish_reason: null })]),
    chunk([choice({ reasoning_details: REASONING }, { content_filter_results: {}, native_finish_reason: null })]),
    chunk([choice({ content: 'Oslo is ' }, { content_filter_results: filters('safe'), native_finish_reason: null })]),
    chunk([choice({ content: 'the capital of Norway.' }, { content_filter_results: filters('low'), native_finish_reason: null })]),
    chunk([], { moderation: MODERATION }),
    chunk([choice({}, { native_finish_reason: 'STOP' }, 'stop')]),
    chunk([], { usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } }),
  ];
}

test('a streamed Azure-like answer accumulates the same from a cache hit, buffered or streamed, as from the live stream', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendChunks(res, azureChunks()));
  const { client } = await openaiGateway(t, upstream);
  const params: Params = { model: 'gpt-4o-2024-08-06', messages: [{ role: 'user', content: 'What is the capital of Norway?' }] };

  const live = await streamed(client, params);
  assert.equal(live.route, 'live');
  // What the SDK made of the live stream has every field the upstream added (else the comparisons below prove little).
  const liveAnswer = answerOf(live.final);
  assert.deepEqual(liveAnswer.prompt_filter_results, PROMPT_FILTERS);
  assert.deepEqual(liveAnswer.citations, CITATIONS);
  assert.deepEqual(liveAnswer.moderation, MODERATION);
  const liveChoice = live.final.choices[0] as unknown as Record<string, unknown>;
  assert.deepEqual(liveChoice.content_filter_results, filters('low'));
  assert.equal(liveChoice.native_finish_reason, 'STOP');
  assert.deepEqual((live.final.choices[0]!.message as unknown as Record<string, unknown>).reasoning_details, REASONING);

  const hit = await streamed(client, params);
  assert.equal(hit.route, 'exact_cache');
  assert.deepEqual(answerOf(hit.final), liveAnswer);

  const { data: buffered, response } = await client.chat.completions.create(params).withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(validateAgainst('CreateChatCompletionResponse', buffered), null);
  assert.deepEqual(answerOf(buffered), liveAnswer);
  assert.equal(upstream.requests.length, 1, 'both hits came from the cache');
});

test('a streamed answer without a content delta (audio in one delta, reasoning only) has content null from a cache hit, buffered or streamed, as from the live stream', async (t) => {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'chatcmpl-audio',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-audio-preview',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  // Expiring long after the test: a hit serves an answer's audio only until then (docs/gateway.md).
  const AUDIO = { id: 'audio_1', data: 'UklGRg==', expires_at: 4102444800, transcript: 'Hello there' };
  const answers: Record<string, unknown[]> = {
    audio: [chunk({ role: 'assistant', content: null, refusal: null }), chunk({ audio: AUDIO }), chunk({}, 'stop')],
    // A compatible server's reasoning model cut short by max_tokens before it wrote any text.
    reasoning: [chunk({ role: 'assistant' }), chunk({ reasoning_content: 'Let me think' }), chunk({}, 'length')],
  };
  let kind = 'audio';
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [...answers[kind]!, { ...chunk({}), choices: [], usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 } }]),
  );
  const { client } = await openaiGateway(t, upstream);
  for (kind of Object.keys(answers)) {
    const params: Params = { model: 'gpt-4o-audio-preview', messages: [{ role: 'user', content: `Answer by ${kind}` }] };
    const live = await streamed(client, params);
    assert.equal(live.route, 'live');
    assert.equal(live.final.choices[0]!.message.content, null, kind);
    const liveAnswer = answerOf(live.final);
    const hit = await streamed(client, params);
    assert.equal(hit.route, 'exact_cache');
    assert.deepEqual(answerOf(hit.final), liveAnswer, kind);
    const { data: buffered, response } = await client.chat.completions.create(params).withResponse();
    assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
    assert.deepEqual(answerOf(buffered), liveAnswer, kind);
  }
  assert.equal(upstream.requests.length, 2, 'every hit came from the cache');
});

/** A legacy function call (a request with the deprecated `functions`) as OpenAI streams it: the name once, then arguments. */
function functionCallChunks(): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'chatcmpl-fn',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-mini',
    service_tier: 'default',
    system_fingerprint: 'fp_fn',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
  return [
    chunk({ role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '' }, refusal: null }),
    chunk({ function_call: { arguments: '{"loc' } }),
    chunk({ function_call: { arguments: 'ation":"Oslo"}' } }),
    chunk({}, 'function_call'),
    { ...(chunk({}) as Record<string, unknown>), choices: [], usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26 } },
  ];
}

test('a streamed legacy function call accumulates the same from a cache hit, buffered or streamed, as from the live stream', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendChunks(res, functionCallChunks()));
  const { client } = await openaiGateway(t, upstream);
  const params: Params = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    functions: [{ name: 'get_weather', parameters: { type: 'object', properties: { location: { type: 'string' } } } }],
  };

  const live = await streamed(client, params);
  assert.equal(live.route, 'live');
  assert.deepEqual(live.final.choices[0]!.message.function_call, { name: 'get_weather', arguments: '{"location":"Oslo"}' });
  assert.equal(live.final.choices[0]!.finish_reason, 'function_call');

  const hit = await streamed(client, params);
  assert.equal(hit.route, 'exact_cache');
  assert.deepEqual(answerOf(hit.final), answerOf(live.final));

  const { data: buffered, response } = await client.chat.completions.create(params).withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(validateAgainst('CreateChatCompletionResponse', buffered), null);
  assert.deepEqual(answerOf(buffered), answerOf(live.final));
  assert.equal(upstream.requests.length, 1, 'both hits came from the cache');
});

/** Buffered answers as Azure OpenAI gives them (filter results, an empty `annotations`), one spoken, one a function call. */
function bufferedAnswer(prompt: string): Record<string, unknown> {
  const message: Record<string, unknown> =
    prompt === 'speak'
      ? { role: 'assistant', content: null, refusal: null, annotations: [], audio: { id: 'audio_1', data: 'UklGRiQAAABXQVZF', expires_at: 4102444800, transcript: 'Oslo.' } }
      : { role: 'assistant', content: null, refusal: null, function_call: { name: 'get_weather', arguments: '{"location":"Oslo"}' } };
  return {
    id: 'chatcmpl-buffered',
    object: 'chat.completion',
    created: 1700000000,
    model: 'gpt-4o-audio-preview',
    system_fingerprint: 'fp_b',
    prompt_filter_results: PROMPT_FILTERS,
    citations: CITATIONS,
    choices: [{ index: 0, message, logprobs: null, finish_reason: prompt === 'speak' ? 'stop' : 'function_call', content_filter_results: filters('safe') }],
    usage: { prompt_tokens: 8, completion_tokens: 5, total_tokens: 13, completion_tokens_details: { audio_tokens: 4, reasoning_tokens: 0 } },
  };
}

test('a buffered answer stored and replayed as a stream accumulates to the answer the live client got', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => sendJson(res, 200, bufferedAnswer(req.body.messages[0].content)));
  const { client } = await openaiGateway(t, upstream);
  for (const prompt of ['speak', 'call']) {
    const params: Params = { model: 'gpt-4o-audio-preview', messages: [{ role: 'user', content: prompt }] };
    const { data: live, response } = await client.chat.completions.create(params).withResponse();
    assert.equal(response.headers.get('x-svc-route'), 'live');
    assert.deepEqual(answerOf(live), answerOf(bufferedAnswer(prompt) as unknown as ChatCompletion), 'relayed as it came');

    const hit = await streamed(client, params);
    assert.equal(hit.route, 'exact_cache', prompt);
    assert.deepEqual(answerOf(hit.final), answerOf(live), prompt);
  }
  assert.equal(upstream.requests.length, 2, 'each hit came from the cache');
});

test('an answer with a top-level field over the bound is not stored, and the live client gets it whole', async (t) => {
  const citations = Array.from({ length: Math.ceil(MAX_WHOLE_FIELD_CHARS / 30) }, (_, i) => `https://example.com/source/${i}`);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 1700000000, model: 'sonar', citations, choices, ...extra });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      chunk([{ index: 0, delta: { role: 'assistant', content: 'Many sources.' }, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
      chunk([], { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
    ]),
  );
  const { client } = await openaiGateway(t, upstream);
  const params: Params = { model: 'sonar', messages: [{ role: 'user', content: 'cite everything' }] };
  assert.ok(JSON.stringify(citations).length > MAX_WHOLE_FIELD_CHARS);

  const live = await streamed(client, params);
  assert.equal(live.route, 'live');
  assert.deepEqual((live.final as unknown as Record<string, unknown>).citations, citations);
  assert.equal(live.final.choices[0]!.message.content, 'Many sources.');

  const again = await streamed(client, params);
  assert.equal(again.route, 'live', 'not stored, so asked again');
  assert.equal(upstream.requests.length, 2);
  assert.deepEqual(answerOf(again.final), answerOf(live.final));
});
