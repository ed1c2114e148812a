/**
 * The chat stream assembler (src/gateway/stream-assembler.ts): when a stream is complete, the calls it emits, what the
 * assembled answer keeps of the chunks, and a stored answer replayed as chunks.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { completionToChunks, MAX_CHUNK_FIELD_CHARS, MAX_EXTRA_CHUNK_FIELDS, StreamAssembler } from '../../src/gateway/stream-assembler.ts';
import { compileTools } from '../../src/gateway/tool-schemas.ts';
import type { ChatChunk, ChatCompletion } from '../../src/gateway/providers/types.ts';
import { validateAgainst } from '../support/openapi.ts';

const chunk = (choices: ChatChunk['choices']): ChatChunk => ({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices }) as ChatChunk;

test('with n > 1, a stream is complete only when every choice finished; a finish repeated for one choice does not count for another', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  assembler.accept(chunk([{ index: 0, delta: { content: 'a' }, finish_reason: null }, { index: 1, delta: { content: 'b' }, finish_reason: null }] as never));
  assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }] as never));
  assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }] as never));
  assert.equal(assembler.finished, false, 'choice 1 never finished');
  assembler.accept(chunk([{ index: 1, delta: {}, finish_reason: 'length' }] as never));
  assert.equal(assembler.finished, true);
  assert.deepEqual(assembler.completion().choices.map((choice) => choice.finish_reason), ['stop', 'length']);
});

test('a tool call streamed without an id is given one; an id arriving in a later fragment is kept', () => {
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  const out = [
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: null }] as never)),
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 1, id: 'call_up', type: 'function', function: { name: 'f', arguments: '' } }] }, finish_reason: null }] as never)),
    ...assembler.accept(chunk([{ index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: '{}' } }] }, finish_reason: 'tool_calls' }] as never)),
  ];
  const ids = out.flatMap((c) => c.choices.flatMap((choice) => (choice.delta?.tool_calls ?? []).map((call) => call.id)));
  assert.equal(ids.length, 2);
  assert.match(ids[0]!, /^call_[0-9a-f]+$/);
  assert.equal(ids[1], 'call_up');
  assert.deepEqual(assembler.completion().choices[0]!.message.tool_calls!.map((call) => call.id), ids);
});

const withFields = (fields: Record<string, unknown>, choices: ChatChunk['choices']): ChatChunk => Object.assign(chunk(choices), fields);

test('top-level fields: the last non-null value of each scalar; obfuscation, objects, arrays and long strings are not kept; unknown ones bounded in number', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  const unknown = Object.fromEntries(Array.from({ length: MAX_EXTRA_CHUNK_FIELDS + 2 }, (_, i) => [`x_${i}`, i]));
  assembler.accept(withFields({ ...unknown, system_fingerprint: 'fp_1', provider: 'acme', obfuscation: 'pad', moderation: { flagged: false } }, [{ index: 0, delta: { content: 'a' }, finish_reason: null }]));
  assembler.accept(withFields({ service_tier: 'flex', system_fingerprint: 'fp_2', provider: null, citations: ['https://example.com'], note: 'n'.repeat(MAX_CHUNK_FIELD_CHARS + 1) }, [{ index: 0, delta: {}, finish_reason: 'stop' }]));
  const completion = assembler.completion();
  assert.equal(completion.service_tier, 'flex', 'kept although the unknown fields reached their bound');
  assert.equal(completion.system_fingerprint, 'fp_2');
  assert.equal(completion.provider, undefined, `only ${MAX_EXTRA_CHUNK_FIELDS} unknown fields are kept: the first ones`);
  assert.equal(completion.x_0, 0);
  assert.equal(completion[`x_${MAX_EXTRA_CHUNK_FIELDS - 1}`], MAX_EXTRA_CHUNK_FIELDS - 1);
  assert.equal(completion[`x_${MAX_EXTRA_CHUNK_FIELDS}`], undefined);
  for (const field of ['obfuscation', 'moderation', 'citations', 'note']) assert.equal(field in completion, false, field);
  assert.equal(completion.object, 'chat.completion');

  const nulls = new StreamAssembler(compileTools(undefined));
  nulls.accept(withFields({ service_tier: 'priority', provider: 'acme' }, [{ index: 0, delta: { content: 'a' }, finish_reason: null }]));
  nulls.accept(withFields({ service_tier: null, provider: null }, [{ index: 0, delta: {}, finish_reason: 'stop' }]));
  assert.equal(nulls.completion().service_tier, 'priority', 'a null keeps the value before it');
  assert.equal(nulls.completion().provider, 'acme');
});

test('a delta\'s annotations and refusal concatenate in order; unknown strings concatenate, numbers and booleans are the last, objects are not kept', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  const citation = (url: string) => ({ type: 'url_citation', url_citation: { start_index: 0, end_index: 1, url, title: url } });
  assembler.accept(chunk([{ index: 0, delta: { role: 'assistant', content: '', reasoning_content: 'Think', score: 1, audio: { id: 'a' } }, finish_reason: null }]));
  assembler.accept(chunk([{ index: 0, delta: { reasoning_content: 'ing.', score: 2, cached: true, annotations: [citation('https://a.example')] }, finish_reason: null }]));
  assembler.accept(chunk([{ index: 0, delta: { content: 'Hi', reasoning_content: null, annotations: [citation('https://b.example'), citation('https://c.example')] }, finish_reason: null }]));
  assembler.accept(chunk([{ index: 0, delta: { refusal: 'No ' }, finish_reason: null }, { index: 1, delta: { content: 'plain', annotations: [] }, finish_reason: 'stop' }]));
  assembler.accept(chunk([{ index: 0, delta: { refusal: 'thanks.' }, finish_reason: 'stop' }]));
  const [first, second] = assembler.completion().choices;
  assert.deepEqual(first!.message, {
    role: 'assistant',
    content: 'Hi',
    refusal: 'No thanks.',
    annotations: [citation('https://a.example'), citation('https://b.example'), citation('https://c.example')],
    reasoning_content: 'Thinking.',
    score: 2,
    cached: true,
  });
  assert.deepEqual(second!.message, { role: 'assistant', content: 'plain', refusal: null, annotations: [] }, 'an empty list sent is an empty list kept');
  assert.equal(validateAgainst('CreateChatCompletionResponse', assembler.completion()), null);
});

test("svc's own tool-call chunks carry the top-level fields the upstream's chunks do", () => {
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  const fields = { service_tier: 'default', system_fingerprint: 'fp_t', obfuscation: 'pad' };
  const out = [
    ...assembler.accept(withFields(fields, [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: null }])),
    ...assembler.accept(withFields(fields, [{ index: 0, delta: {}, finish_reason: 'tool_calls' }])),
  ];
  const call = out.find((c) => c.choices[0]?.delta.tool_calls)!;
  assert.equal(call.service_tier, 'default');
  assert.equal(call.system_fingerprint, 'fp_t');
  assert.equal('obfuscation' in call, false, 'the padding belonged to the upstream chunk');
  assert.equal(validateAgainst('CreateChatCompletionStreamResponse', call), null);
});

test('a stored answer replayed as chunks assembles back to the same answer, each chunk with its top-level fields', () => {
  const stored: ChatCompletion = {
    id: 'chatcmpl-stored',
    object: 'chat.completion',
    created: 1700000000,
    model: 'm',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Oslo is the capital.',
          refusal: null,
          annotations: [{ type: 'url_citation', url_citation: { start_index: 0, end_index: 4, url: 'https://example.com', title: 'Oslo' } }],
          reasoning_content: 'Look it up.',
        },
        finish_reason: 'stop',
        logprobs: null,
      },
      { index: 1, message: { role: 'assistant', content: null, refusal: "I can't help with that." }, finish_reason: 'stop', logprobs: null },
      { index: 2, message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls', logprobs: null },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 },
    service_tier: 'priority',
    system_fingerprint: 'fp_s',
    provider: 'acme',
    long: 'x'.repeat(MAX_CHUNK_FIELD_CHARS + 1),
    moderation: { flagged: false },
  };
  const chunks = completionToChunks(stored, { id: stored.id, created: stored.created, includeUsage: true });
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  for (const replayed of chunks) {
    assert.equal(replayed.service_tier, 'priority');
    assert.equal(replayed.system_fingerprint, 'fp_s');
    assert.equal(replayed.provider, 'acme');
    assert.equal('long' in replayed || 'moderation' in replayed, false, 'only short scalars are repeated on every chunk');
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', replayed), null);
    assembler.accept(replayed);
  }
  assembler.end();
  const { long: _long, moderation: _moderation, ...expected } = stored;
  assert.deepEqual(assembler.completion(), expected);
});

test('a chunk key `__proto__` is not kept and does not use up the unknown fields a replay repeats', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  for (let i = 0; i < 10; i++) {
    // JSON.parse makes `__proto__` an own key, as an upstream's chunk has it.
    assembler.accept(JSON.parse(`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","__proto__":${i},"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`));
  }
  assembler.accept(JSON.parse('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","provider":"late","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'));
  const completion = assembler.completion() as unknown as Record<string, unknown>;
  assert.equal(completion.provider, 'late');
  assert.equal(Object.getPrototypeOf(completion), Object.prototype);
  assert.equal(Object.hasOwn(completion, '__proto__'), false);
});

test('a stored answer\'s `__proto__` key does not use up the unknown fields its replayed chunks repeat', () => {
  const extras = Object.fromEntries(Array.from({ length: MAX_EXTRA_CHUNK_FIELDS }, (_, i) => [`extra_${i}`, i]));
  // JSON.parse makes `__proto__` an own key, as a stored answer read back has it.
  const stored = JSON.parse(
    `{"__proto__":1,${JSON.stringify(extras).slice(1, -1)},"id":"c","object":"chat.completion","created":1,"model":"m",` +
      '"choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"finish_reason":"stop","logprobs":null}]}',
  ) as ChatCompletion;
  const chunks = completionToChunks(stored, { id: 'c', created: 1, includeUsage: false });
  for (const chunk of chunks) {
    for (const [key, value] of Object.entries(extras)) assert.equal((chunk as unknown as Record<string, unknown>)[key], value, key);
    assert.equal(Object.getPrototypeOf(chunk), Object.prototype);
  }
});
