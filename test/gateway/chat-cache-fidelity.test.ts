/**
 * What an exact-cache hit on the chat-completions wire gives back of a live answer: the official `openai` client
 * against a listening svc whose live provider is a fake upstream started by the test. A streamed answer's
 * `service_tier`, `system_fingerprint`, url citations, refusal and fields svc does not know are stored with it and
 * come back on a hit, buffered or streamed; payloads checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';



const FIRST_CITATION = { type: 'url_citation', url_citation: { start_index: 0, end_index: 4, url: 'https://example.com/oslo', title: 'Oslo' } };
const SECOND_CITATION = { type: 'url_citation', url_citation: { start_index: 8, end_index: 24, url: 'https://example.com/norway', title: 'Norway' } };

/**
 * A search model's answer as an upstream streams it: every chunk with `service_tier`, `system_fingerprint`, a field
 * svc does not know (`provider_region`) and its own `obfuscation`; reasoning in a delta field svc does not know; the
 * citations in two deltas after the text.
 */
function searchAnswerChunks(): Record<string, unknown>[] {
  let n = 0;
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    id: 'chatcmpl-search',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'gpt-4o-mini',
    service_tier: 'priority',
    system_fingerprint: 'fp_live_7',
    provider_region: 'eu-north',
    obfuscation: `pad${(n += 1)}`,
    choices,
    ...extra,
  });
  const delta = (d: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: d, logprobs: null, finish_reason: finish }]);
  return [
    delta({ role: 'assistant', content: '', refusal: null }),
    delta({ reasoning_content: 'Search the ' }),
    delta({ reasoning_content: 'web.' }),
    delta({ content: 'Oslo is the capital of Norway.' }),
    delta({ annotations: [FIRST_CITATION] }),
    delta({ annotations: [SECOND_CITATION] }),
    delta({}, 'stop'),
    chunk([], { usage: { prompt_tokens: 9, completion_tokens: 7, total_tokens: 16 } }),
  ];
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** A delta field's pieces joined, for strings, or its arrays concatenated, across the chunks of choice 0. */
function joined(chunks: ChatCompletionChunk[], field: string): unknown {
  const values = chunks.flatMap((chunk) => chunk.choices.filter((choice) => choice.index === 0).map((choice) => (choice.delta as Record<string, unknown>)[field]));
  const present = values.filter((value) => value !== undefined && value !== null);
  return present.every(Array.isArray) && present.length > 0 ? present.flat() : present.join('');
}

test('a streamed answer comes back from the cache with its service_tier, system_fingerprint, citations and unknown fields, buffered and streamed', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendChunks(res, searchAnswerChunks()));
  const { client } = await openaiGateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is the capital of Norway?' }] };

  const { data: liveStream, response: liveResponse } = await client.chat.completions.create({ ...request, stream: true }).withResponse();
  const live = await collect(liveStream);
  assert.equal(liveResponse.headers.get('x-svc-route'), 'live');
  for (const chunk of live) {
    assert.equal(chunk.service_tier, 'priority');
    assert.equal(chunk.system_fingerprint, 'fp_live_7');
    assert.equal((chunk as unknown as Record<string, unknown>).provider_region, 'eu-north');
  }
  assert.deepEqual(joined(live, 'annotations'), [FIRST_CITATION, SECOND_CITATION]);

  // Buffered hit: the stored chat.completion.
  const { data: buffered, response: bufferedResponse } = await client.chat.completions.create(request).withResponse();
  assert.equal(bufferedResponse.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(validateAgainst('CreateChatCompletionResponse', buffered), null);
  assert.equal(buffered.service_tier, 'priority');
  assert.equal(buffered.system_fingerprint, 'fp_live_7');
  assert.equal((buffered as unknown as Record<string, unknown>).provider_region, 'eu-north');
  assert.equal('obfuscation' in buffered, false, 'a chunk\'s padding is not part of the answer');
  const message = buffered.choices[0]!.message;
  assert.equal(message.content, 'Oslo is the capital of Norway.');
  assert.equal(message.refusal, null);
  assert.deepEqual(message.annotations, [FIRST_CITATION, SECOND_CITATION]);
  assert.equal((message as unknown as Record<string, unknown>).reasoning_content, 'Search the web.');

  // Streamed hit: chunks made from it, each with the live chunks' top-level fields, the rest in deltas.
  const { data: replayStream, response: replayResponse } = await client.chat.completions
    .create({ ...request, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  const replayed = await collect(replayStream);
  assert.equal(replayResponse.headers.get('x-svc-route'), 'exact_cache');
  for (const chunk of replayed) {
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
    assert.equal(chunk.service_tier, 'priority');
    assert.equal(chunk.system_fingerprint, 'fp_live_7');
    assert.equal((chunk as unknown as Record<string, unknown>).provider_region, 'eu-north');
  }
  for (const field of ['content', 'reasoning_content', 'annotations']) {
    assert.deepEqual(joined(replayed, field), joined(live, field), field);
  }
  assert.equal(replayed.at(-1)!.usage!.total_tokens, 16);

  // The SDK's own accumulator makes the same message of the replay as the buffered hit is.
  const final = await client.chat.completions.stream(request).finalChatCompletion();
  assert.deepEqual(final.choices[0]!.message.annotations, [FIRST_CITATION, SECOND_CITATION]);
  assert.equal((final.choices[0]!.message as unknown as Record<string, unknown>).reasoning_content, 'Search the web.');
  assert.equal(final.service_tier, 'priority');
  assert.equal(upstream.requests.length, 1, 'every later answer came from the cache');
});

test('a streamed refusal comes back from the cache as a refusal, buffered and streamed', async (t) => {
  const base = { id: 'chatcmpl-refusal', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', service_tier: 'default', system_fingerprint: 'fp_r' };
  const delta = (d: Record<string, unknown>, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }] });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [delta({ role: 'assistant', content: null, refusal: '' }), delta({ refusal: "I can't help " }), delta({ refusal: 'with that.' }), delta({}, 'stop')]),
  );
  const { client } = await openaiGateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'something refused' }] };
  const live = await collect(await client.chat.completions.create({ ...request, stream: true }));
  assert.equal(joined(live, 'refusal'), "I can't help with that.");

  const { data: buffered, response } = await client.chat.completions.create(request).withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(validateAgainst('CreateChatCompletionResponse', buffered), null);
  assert.equal(buffered.choices[0]!.message.refusal, "I can't help with that.");
  assert.equal(buffered.choices[0]!.message.content, null, 'no text came, as in a buffered refusal');
  assert.equal(buffered.service_tier, 'default');

  const replayed = await collect(await client.chat.completions.create({ ...request, stream: true }));
  for (const chunk of replayed) {
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
    assert.equal(chunk.service_tier, 'default');
    assert.equal(chunk.system_fingerprint, 'fp_r');
  }
  assert.equal(joined(replayed, 'refusal'), "I can't help with that.");
  const final = await client.chat.completions.stream(request).finalChatCompletion();
  assert.equal(final.choices[0]!.message.refusal, "I can't help with that.");
  assert.equal(final.choices[0]!.message.content, null);
  assert.equal(upstream.requests.length, 1);
});

test('a buffered answer replayed as a stream carries its service_tier and system_fingerprint on every chunk and its citations in a delta', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, {
      id: 'chatcmpl-buffered',
      object: 'chat.completion',
      created: 1700000000,
      model: 'gpt-4o-mini',
      service_tier: 'flex',
      system_fingerprint: 'fp_b',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Oslo is the capital.', refusal: null, annotations: [FIRST_CITATION] }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 4, total_tokens: 9 },
    }),
  );
  const { client } = await openaiGateway(t, upstream);
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'capital, buffered first' }] };
  await client.chat.completions.create(request);
  const { data, response } = await client.chat.completions.create({ ...request, stream: true }).withResponse();
  const replayed = await collect(data);
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  for (const chunk of replayed) {
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
    assert.equal(chunk.service_tier, 'flex');
    assert.equal(chunk.system_fingerprint, 'fp_b');
  }
  assert.deepEqual(joined(replayed, 'annotations'), [FIRST_CITATION]);
  assert.equal(joined(replayed, 'content'), 'Oslo is the capital.');
  assert.equal(upstream.requests.length, 1);
});
