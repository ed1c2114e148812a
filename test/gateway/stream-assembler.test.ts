/**
 * The chat stream assembler (src/gateway/stream-assembler.ts): when a stream is complete, the calls it emits, what the
 * assembled answer keeps of the chunks, and a stored answer replayed as chunks.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { completionToChunks, MAX_CHUNK_FIELD_CHARS, MAX_EXTRA_CHUNK_FIELDS, MAX_WHOLE_FIELD_CHARS, MAX_WHOLE_FIELDS_CHARS, StreamAssembler } from '../../src/gateway/stream-assembler.ts';
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

test("at the stream's end ([DONE]), a choice the upstream named no finish_reason for finishes as a buffered null does (stop, not stored); one whose only delta was a call svc held gets its role on that call", () => {
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  assembler.accept(chunk([{ index: 0, delta: { role: 'assistant', content: 'a' }, finish_reason: null }, { index: 1, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{' } }] }, finish_reason: null }] as never));
  assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: null }, { index: 1, delta: { tool_calls: [{ index: 0, function: { arguments: '}' } }] }, finish_reason: null }] as never));
  assert.equal(assembler.finished, false);
  const out = assembler.end();
  for (const sent of out) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', sent), null, JSON.stringify(sent));
  assert.deepEqual(
    out.map((sent) => [sent.choices[0]!.index, sent.choices[0]!.delta.role, sent.choices[0]!.delta.tool_calls?.length, sent.choices[0]!.finish_reason]),
    [[0, undefined, undefined, 'stop'], [1, 'assistant', 1, null], [1, undefined, undefined, 'stop']],
  );
  assert.equal(assembler.finished, true);
  assert.equal(assembler.storable, false);
  assert.deepEqual(assembler.completion().choices.map((choice) => choice.finish_reason), ['stop', 'stop']);
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

const callChunk = (index: number, call: Record<string, unknown>, finish: string | null = null): ChatChunk =>
  chunk([{ index: 0, delta: { tool_calls: [{ index, ...call }] }, finish_reason: finish }] as never);
const emittedCalls = (out: ChatChunk[]) => out.flatMap((c) => c.choices.flatMap((choice) => choice.delta?.tool_calls ?? []));
const CITY_TOOL = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];

test('sequential tool calls: a call whose arguments are whole JSON goes out as soon as the next index starts, not at the finish', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  assembler.accept(callChunk(0, { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"city":' } }));
  assert.deepEqual(emittedCalls(assembler.accept(callChunk(0, { function: { arguments: '"Oslo"}' } }))), []);
  const out = assembler.accept(callChunk(1, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '{"ci' } }));
  assert.deepEqual(emittedCalls(out).map((call) => [call.index, call.id, call.function?.arguments]), [[0, 'call_a', '{"city":"Oslo"}']]);
  assembler.accept(callChunk(1, { function: { arguments: 'ty":"Lima"}' } }));
  assert.deepEqual(emittedCalls(assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }] as never))).map((call) => call.id), ['call_b']);
});

test('interleaved tool calls are held and emitted in index order at the finish; the assembled answer has them so', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  const early = [
    ...assembler.accept(callChunk(0, { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"city":' } })),
    ...assembler.accept(callChunk(1, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '{"city":"Li' } })),
    ...assembler.accept(callChunk(0, { function: { arguments: '"Oslo"}' } })),
    ...assembler.accept(callChunk(2, { id: 'call_c', type: 'function', function: { name: 'f', arguments: '{"city":"Rome"}' } })),
    ...assembler.accept(callChunk(1, { function: { arguments: 'ma"}' } })),
  ];
  assert.deepEqual(emittedCalls(early), [], 'held until the finish once the calls interleave');
  const out = assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }] as never));
  assert.deepEqual(emittedCalls(out).map((call) => [call.index, call.id, call.function?.arguments]), [
    [0, 'call_a', '{"city":"Oslo"}'],
    [1, 'call_b', '{"city":"Lima"}'],
    [2, 'call_c', '{"city":"Rome"}'],
  ]);
  assert.deepEqual(assembler.completion().choices[0]!.message.tool_calls!.map((call) => call.id), ['call_a', 'call_b', 'call_c']);
});

test('a fragment for a call already emitted may repeat it or add whitespace; one that adds arguments is an invalid tool call', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  assembler.accept(callChunk(0, { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"city":"Oslo"}' } }));
  assert.equal(emittedCalls(assembler.accept(callChunk(1, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '' } }))).length, 1);
  assembler.accept(callChunk(0, { id: 'call_a', function: { name: 'f', arguments: ' ' } }));
  assert.throws(() => assembler.accept(callChunk(0, { function: { arguments: ',"x":1}' } })), /index 0 went on after its arguments were complete/);
});

test('a held call that fails its check when the choice finishes is never emitted, nor are the calls after it', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  const out = [
    ...assembler.accept(callChunk(0, { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"town":' } })),
    ...assembler.accept(callChunk(1, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '{"city":"Lima"}' } })),
    ...assembler.accept(callChunk(0, { function: { arguments: '"Oslo"}' } })),
  ];
  assert.deepEqual(emittedCalls(out), []);
  assert.throws(() => assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }] as never)), /do not match its schema/);
});

test('whole JSON that fails its check is refused when the next index starts, as before', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  assembler.accept(callChunk(0, { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"town":"Oslo"}' } }));
  assert.throws(() => assembler.accept(callChunk(1, { id: 'call_b', type: 'function', function: { name: 'f', arguments: '' } })), /do not match its schema/);
});

test('fragments without an index: an id arriving late names the call before it; an id other than an upstream\'s starts the next call', () => {
  const assembler = new StreamAssembler(compileTools(CITY_TOOL));
  const noIndex = (call: Record<string, unknown>, finish: string | null = null) => chunk([{ index: 0, delta: { tool_calls: [call] }, finish_reason: finish }] as never);
  const out = [
    ...assembler.accept(noIndex({ type: 'function', function: { name: 'f', arguments: '{"city":' } })),
    ...assembler.accept(noIndex({ id: 'call_late', function: { arguments: '"Oslo"}' } })),
    ...assembler.accept(noIndex({ id: 'call_next', type: 'function', function: { name: 'f', arguments: '{"city":"Lima"}' } })),
    ...assembler.accept(noIndex({ function: { arguments: ' ' } }, 'tool_calls')),
  ];
  assert.deepEqual(emittedCalls(out).map((call) => [call.index, call.id, call.function?.arguments]), [
    [0, 'call_late', '{"city":"Oslo"}'],
    [1, 'call_next', '{"city":"Lima"} '],
  ]);
});

const withFields = (fields: Record<string, unknown>, choices: ChatChunk['choices']): ChatChunk => Object.assign(chunk(choices), fields);

test('top-level fields: the last non-null value of each; obfuscation is not kept; short scalars repeated on svc\'s chunks, bounded in number, the rest kept whole', () => {
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  const unknown = Object.fromEntries(Array.from({ length: MAX_EXTRA_CHUNK_FIELDS + 2 }, (_, i) => [`x_${i}`, i]));
  const filter = [{ prompt_index: 0, content_filter_results: { hate: { filtered: false, severity: 'safe' } } }];
  assembler.accept(withFields({ ...unknown, system_fingerprint: 'fp_1', provider: 'acme', obfuscation: 'pad', moderation: { flagged: true }, prompt_filter_results: filter }, []));
  assembler.accept(withFields({ moderation: { flagged: false }, citations: ['https://a.example'] }, [{ index: 0, delta: { content: 'a' }, finish_reason: null }]));
  const long = 'n'.repeat(MAX_CHUNK_FIELD_CHARS + 1);
  const out = assembler.accept(
    withFields({ service_tier: 'flex', system_fingerprint: 'fp_2', provider: null, citations: ['https://b.example'], note: long }, [
      { index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' },
    ]),
  );
  const completion = assembler.completion();
  assert.equal(completion.service_tier, 'flex', 'kept although the unknown fields reached their bound');
  assert.equal(completion.system_fingerprint, 'fp_2');
  assert.equal(completion.x_0, 0);
  assert.equal(completion[`x_${MAX_EXTRA_CHUNK_FIELDS}`], MAX_EXTRA_CHUNK_FIELDS, 'past the bound, kept to be sent once');
  assert.equal(completion.provider, 'acme', 'a null keeps the value before it');
  assert.deepEqual(completion.moderation, { flagged: false }, 'the last value, whole');
  assert.deepEqual(completion.citations, ['https://b.example'], 'the last value, not joined');
  assert.deepEqual(completion.prompt_filter_results, filter, 'kept from the first chunk, which no later one changed');
  assert.equal(completion.note, long);
  assert.equal('obfuscation' in completion, false);
  assert.equal(completion.object, 'chat.completion');
  assert.equal(assembler.storable, true);

  // svc's own tool-call chunk repeats only what every chunk of a replay would: the short scalars within the bound.
  const call = out.find((c) => c.choices[0]?.delta.tool_calls)!;
  assert.equal(call.x_0, 0);
  assert.equal(call.service_tier, 'flex');
  for (const field of [`x_${MAX_EXTRA_CHUNK_FIELDS}`, 'moderation', 'citations', 'prompt_filter_results', 'note']) assert.equal(field in call, false, field);

  const nulls = new StreamAssembler(compileTools(undefined));
  nulls.accept(withFields({ service_tier: 'priority', provider: 'acme' }, [{ index: 0, delta: { content: 'a' }, finish_reason: null }]));
  nulls.accept(withFields({ service_tier: null, provider: null }, [{ index: 0, delta: {}, finish_reason: 'stop' }]));
  assert.equal(nulls.completion().service_tier, 'priority', 'a null keeps the value before it');
  assert.equal(nulls.completion().provider, 'acme');
});

test('a field that was short and grows is kept whole, and frees its place among the repeated ones', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  const short = Object.fromEntries(Array.from({ length: MAX_EXTRA_CHUNK_FIELDS }, (_, i) => [`x_${i}`, 'short']));
  assembler.accept(withFields(short, [{ index: 0, delta: { content: 'a' }, finish_reason: null }]));
  assembler.accept(withFields({ x_0: { grown: true }, late: 'l' }, [{ index: 0, delta: {}, finish_reason: 'stop' }]));
  const completion = assembler.completion();
  assert.deepEqual(completion.x_0, { grown: true });
  const replayed = completionToChunks(completion, { id: 'c', created: 1, includeUsage: false });
  assert.equal(replayed.every((c) => c.late === 'l' && c.x_1 === 'short'), true, 'repeated on every chunk');
  assert.deepEqual(replayed.map((c) => c.x_0), [{ grown: true }, ...replayed.slice(1).map(() => undefined)], 'sent once, on the first chunk');
});

test('an answer whose fields kept whole are over a bound, one alone or all together, is not storable', () => {
  const answer = (fields: Record<string, unknown>) => {
    const assembler = new StreamAssembler(compileTools(undefined));
    assembler.accept(withFields(fields, [{ index: 0, delta: { content: 'a' }, finish_reason: 'stop' }]));
    return assembler;
  };
  // A field's characters are its name's and its value's JSON.
  const sized = (name: string, chars: number) => ({ [name]: 'x'.repeat(chars - name.length - 2) });
  assert.equal(answer(sized('citations', MAX_WHOLE_FIELD_CHARS)).storable, true);
  const over = answer(sized('citations', MAX_WHOLE_FIELD_CHARS + 1));
  assert.equal(over.storable, false);
  assert.equal((over.completion().citations as string).length, MAX_WHOLE_FIELD_CHARS + 1 - 'citations'.length - 2, 'the answer itself keeps it whole');
  const many = (count: number) => Object.assign({}, ...Array.from({ length: count }, (_, i) => sized(`f_${String(i).padStart(4, '0')}`, MAX_WHOLE_FIELDS_CHARS / 8)));
  assert.equal(answer(many(8)).storable, true);
  assert.equal(answer({ ...many(8), one: [1] }).storable, false);
});

test('a delta\'s annotations and refusal concatenate in order; unknown strings concatenate, numbers and booleans are the last, an object is kept whole', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  const citation = (url: string) => ({ type: 'url_citation', url_citation: { start_index: 0, end_index: 1, url, title: url } });
  const audio = { id: 'audio_1', data: 'UklGRg==', expires_at: 1700003600, transcript: 'Hi' };
  assembler.accept(chunk([{ index: 0, delta: { role: 'assistant', content: '', reasoning_content: 'Think', score: 1, audio }, finish_reason: null }]));
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
    audio,
  });
  assert.deepEqual(second!.message, { role: 'assistant', content: 'plain', refusal: null, annotations: [] }, 'an empty list sent is an empty list kept');
  assert.equal(validateAgainst('CreateChatCompletionResponse', assembler.completion()), null);
});

test('a choice\'s own fields beside its delta: the last value of each, null included, relayed even with an empty delta', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  const safe = { hate: { filtered: false, severity: 'safe' } };
  const low = { hate: { filtered: false, severity: 'low' } };
  const out = [
    ...assembler.accept(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, content_filter_results: {}, native_finish_reason: null }])),
    ...assembler.accept(chunk([{ index: 0, delta: { content: 'Hi' }, finish_reason: null, content_filter_results: safe, native_finish_reason: null }])),
    ...assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: null, content_filter_results: low }])),
    ...assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'stop', native_finish_reason: 'STOP' }, { index: 1, delta: { content: 'b' }, finish_reason: 'stop', stop_reason: null }])),
  ];
  assert.deepEqual(out[2]!.choices, [{ index: 0, delta: {}, finish_reason: null, content_filter_results: low }], 'an empty delta with fields goes out');
  const [first, second] = assembler.completion().choices;
  assert.deepEqual(first, {
    index: 0,
    message: { role: 'assistant', content: 'Hi', refusal: null },
    finish_reason: 'stop',
    logprobs: null,
    content_filter_results: low,
    native_finish_reason: 'STOP',
  });
  assert.equal(Object.hasOwn(second!, 'stop_reason') && second!.stop_reason === null, true, 'a null is a value of its own');
  assert.equal(assembler.storable, true);
  assert.equal(validateAgainst('CreateChatCompletionResponse', assembler.completion()), null);
});

test('a choice\'s `__proto__` key is not kept; a choice with a `message` in a chunk makes the answer not storable', () => {
  const assembler = new StreamAssembler(compileTools(undefined));
  // JSON.parse makes `__proto__` an own key, as an upstream's chunk has it.
  assembler.accept(JSON.parse('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop","__proto__":{"polluted":true}}]}'));
  const choice = assembler.completion().choices[0]!;
  assert.equal(Object.getPrototypeOf(choice), Object.prototype);
  assert.equal(Object.hasOwn(choice, '__proto__') || 'polluted' in choice, false);
  assert.equal(assembler.storable, true);

  const withMessage = new StreamAssembler(compileTools(undefined));
  withMessage.accept(chunk([{ index: 0, delta: { content: 'x' }, finish_reason: 'stop', message: { role: 'assistant', content: 'x' } }]));
  assert.equal(withMessage.storable, false);
});

test('an object or array a second delta of the choice has too makes the answer not storable; one in each of two choices does not', () => {
  const details = (text: string) => [{ type: 'reasoning.text', text, index: 0 }];
  const twice = new StreamAssembler(compileTools(undefined));
  twice.accept(chunk([{ index: 0, delta: { role: 'assistant', content: '', reasoning_details: details('Let me ') }, finish_reason: null }]));
  twice.accept(chunk([{ index: 0, delta: { reasoning_details: details('think.') }, finish_reason: null }]));
  twice.accept(chunk([{ index: 0, delta: { content: 'Yes.' }, finish_reason: 'stop' }]));
  assert.equal(twice.storable, false);
  assert.equal(twice.completion().choices[0]!.message.content, 'Yes.', 'the run still records the answer');

  const apart = new StreamAssembler(compileTools(undefined));
  apart.accept(chunk([{ index: 0, delta: { reasoning_details: details('a') }, finish_reason: null }, { index: 1, delta: { reasoning_details: details('b') }, finish_reason: null }]));
  apart.accept(chunk([{ index: 0, delta: { content: 'x', reasoning_details: null }, finish_reason: 'stop' }, { index: 1, delta: { content: 'y' }, finish_reason: 'stop' }]));
  assert.equal(apart.storable, true, 'a null is no value');
  assert.deepEqual(apart.completion().choices.map((choice) => choice.message.reasoning_details), [details('a'), details('b')]);

  const polluted = new StreamAssembler(compileTools(undefined));
  polluted.accept(JSON.parse('{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"x","__proto__":{"polluted":true}},"finish_reason":"stop"}]}'));
  const message = polluted.completion().choices[0]!.message;
  assert.equal(Object.getPrototypeOf(message), Object.prototype);
  assert.equal('polluted' in message, false);
});

test('a legacy function_call: arguments concatenate, the name comes once, the fragments pass through; a second name or a fragment not of strings is not storable', () => {
  const fragments = [{ name: 'get_weather', arguments: '' }, { arguments: '{"location"' }, { arguments: ':"Oslo"}' }];
  const assembler = new StreamAssembler(compileTools(undefined));
  const out = [
    ...assembler.accept(chunk([{ index: 0, delta: { role: 'assistant', content: null, function_call: fragments[0] }, finish_reason: null }])),
    ...assembler.accept(chunk([{ index: 0, delta: { function_call: fragments[1] }, finish_reason: null }])),
    ...assembler.accept(chunk([{ index: 0, delta: { function_call: fragments[2] }, finish_reason: null }])),
    ...assembler.accept(chunk([{ index: 0, delta: {}, finish_reason: 'function_call' }])),
  ];
  assert.deepEqual(out.map((c) => c.choices[0]!.delta.function_call), [...fragments, undefined]);
  const completion = assembler.completion();
  assert.deepEqual(completion.choices[0], {
    index: 0,
    message: { role: 'assistant', content: null, refusal: null, function_call: { name: 'get_weather', arguments: '{"location":"Oslo"}' } },
    finish_reason: 'function_call',
    logprobs: null,
  });
  assert.equal(assembler.storable, true);
  assert.equal(assembler.completionText, 'get_weather{"location":"Oslo"}', 'counted for a usage estimate');
  assert.equal(validateAgainst('CreateChatCompletionResponse', completion), null);

  for (const second of [{ name: 'get_weather' }, { arguments: 1 }, 'get_weather']) {
    const refused = new StreamAssembler(compileTools(undefined));
    refused.accept(chunk([{ index: 0, delta: { function_call: fragments[0] }, finish_reason: null }]));
    refused.accept(chunk([{ index: 0, delta: { function_call: second }, finish_reason: 'function_call' }]));
    assert.equal(refused.storable, false, JSON.stringify(second));
  }
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
          reasoning_details: [{ type: 'reasoning.encrypted', data: 'b64', index: 0 }],
        },
        finish_reason: 'stop',
        logprobs: null,
        content_filter_results: { hate: { filtered: false, severity: 'safe' } },
      },
      { index: 1, message: { role: 'assistant', content: null, refusal: "I can't help with that.", annotations: [] }, finish_reason: 'stop', logprobs: null, stop_reason: null },
      { index: 2, message: { role: 'assistant', content: null, refusal: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] }, finish_reason: 'tool_calls', logprobs: null },
      { index: 3, message: { role: 'assistant', content: null, refusal: null, function_call: { name: 'g', arguments: '{"b":2}' } }, finish_reason: 'function_call', logprobs: null },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 },
    service_tier: 'priority',
    system_fingerprint: 'fp_s',
    provider: 'acme',
    long: 'x'.repeat(MAX_CHUNK_FIELD_CHARS + 1),
    moderation: { input: { type: 'moderation_results', model: 'omni-moderation-latest', results: [] }, output: { type: 'error', code: 'timeout', message: 'Moderation timed out.' } },
    prompt_filter_results: [{ prompt_index: 0, content_filter_results: {} }],
  };
  const chunks = completionToChunks(stored, { id: stored.id, created: stored.created, includeUsage: true });
  const assembler = new StreamAssembler(compileTools([{ type: 'function', function: { name: 'f' } }]));
  for (const [at, replayed] of chunks.entries()) {
    assert.equal(replayed.service_tier, 'priority');
    assert.equal(replayed.system_fingerprint, 'fp_s');
    assert.equal(replayed.provider, 'acme');
    for (const field of ['long', 'moderation', 'prompt_filter_results']) assert.equal(field in replayed, at === 0, `${field} is on the first chunk only`);
    for (const choice of replayed.choices) {
      const opening = choice.delta.role === 'assistant' && choice.index < 2;
      assert.equal('content_filter_results' in choice || 'stop_reason' in choice, opening, 'a choice\'s own fields are on its first chunk only');
    }
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', replayed), null);
    assembler.accept(replayed);
  }
  assembler.end();
  assert.deepEqual(assembler.completion(), stored);
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
