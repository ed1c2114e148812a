/**
 * What svc relays on the chat-completions wire when an upstream's answer differs from OpenAI's: the official `openai`
 * client against a listening svc over a fake upstream, each answer checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';

test("a buffered answer without fields the OpenAPI document requires (Ollama's has no logprobs nor refusal; some servers leave out object, id, created, model, a choice's index, the role) reaches the client with them, live and from the cache", async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
  const answers: Record<string, unknown> = {
    // Ollama's compatible endpoint.
    ollama: { id: 'chatcmpl-1', object: 'chat.completion', created: 1700000000, model: 'llama3', system_fingerprint: 'fp_ollama', choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage },
    bare: { choices: [{ message: { content: 'hi' }, finish_reason: 'stop' }, { message: { content: 'ho' }, finish_reason: 'length' }], usage },
  };
  const upstream = await startFakeUpstream(t, (request, res) => sendJson(res, 200, answers[request.body.messages[0].content]));
  const { client } = await openaiGateway(t, upstream);
  for (const name of Object.keys(answers)) {
    for (const route of ['live', 'exact_cache']) {
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: name }] }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route);
      assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, `${name} ${route}: ${JSON.stringify(data)}`);
      assert.deepEqual(data.choices.map((choice) => [choice.index, choice.logprobs, choice.message.role, choice.message.refusal]), data.choices.map((_, index) => [index, null, 'assistant', null]));
      assert.equal(data.choices[0]!.message.content, 'hi');
    }
  }
  // What the upstream did send stays as it sent it.
  const ollama = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'ollama' }] });
  assert.equal(ollama.model, 'llama3');
  assert.equal(ollama.system_fingerprint, 'fp_ollama');
  // Where the upstream sent none: the model asked for, as svc names a cache hit's own id and time.
  const bare = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bare' }] });
  assert.equal(bare.model, 'gpt-4o-mini');
  assert.equal(bare.object, 'chat.completion');
});

test('streamed chunks without the id, created and model the OpenAPI document requires (as some compatible servers send them) reach the client with them, one id and time for the stream, the model asked for; what the upstream sent is kept', async (t) => {
  const tool = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const call = { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
  const upstream = await startFakeUpstream(t, (request, res) =>
    request.body.messages[0].content === 'kept'
      ? sendChunks(res, [
          { id: 'chatcmpl-up', created: 1700000000, model: 'llama3', choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' } }] },
          { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        ])
      : sendChunks(res, [
          { choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' } }] },
          { choices: [{ index: 0, delta: { tool_calls: [call] } }] },
          { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
        ]),
  );
  const { client } = await openaiGateway(t, upstream);
  const read = async (content: string) => {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }], tools: [tool], stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
    return chunks;
  };
  const chunks = await read('bare');
  // The role, the call, the finish and svc's usage chunk (the upstream sent none).
  assert.equal(chunks.length, 4);
  assert.equal(chunks.at(-1)!.usage!.completion_tokens > 0, true);
  assert.equal(new Set(chunks.map((chunk) => `${chunk.id} ${chunk.created} ${chunk.model}`)).size, 1);
  assert.equal(chunks[0]!.model, 'gpt-4o-mini');
  // Taken from the chunks before where a later one leaves them out.
  assert.deepEqual(new Set((await read('kept')).map((chunk) => `${chunk.id} ${chunk.created} ${chunk.model}`)), new Set(['chatcmpl-up 1700000000 llama3']));
  // The SDK's stream helper assembles an answer that has them.
  const final = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'bare again' }], tools: [tool] }).finalChatCompletion();
  assert.equal(typeof final.id, 'string');
  assert.equal(Number.isInteger(final.created), true);
  assert.equal(final.model, 'gpt-4o-mini');
  assert.equal(final.choices[0]!.message.tool_calls![0]!.function.name, 'get_weather');
});

test('an empty or blank model from the upstream (as some compatible servers send it) names none: the client gets the model it asked for, buffered and streamed, as the embeddings wire does', async (t) => {
  const answer = (model: string) => ({ id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, logprobs: null, finish_reason: 'stop' }] });
  const chunk = (model: string, delta: Record<string, unknown>, finish: string | null) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model, choices: [{ index: 0, delta, finish_reason: finish }] });
  const upstream = await startFakeUpstream(t, (request, res) => {
    const model = request.body.messages[0].content.startsWith('blank') ? '  ' : '';
    if (request.body.stream) sendChunks(res, [chunk(model, { role: 'assistant', content: 'hi' }, null), chunk(model, {}, 'stop')]);
    else sendJson(res, 200, answer(model));
  });
  const { client } = await openaiGateway(t, upstream);
  for (const content of ['empty', 'blank']) {
    assert.equal((await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] })).model, 'gpt-4o-mini', content);
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${content} streamed` }], stream: true });
    const models = new Set<string>();
    for await (const got of stream) models.add(got.model);
    assert.deepEqual([...models], ['gpt-4o-mini'], content);
  }
});

test("a streamed choice whose upstream sent no role gets the assistant's on its first delta, as OpenAI sends it: the SDK's stream helper failed with 'missing role for choice 0'", async (t) => {
  const tool = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };
  const chunk = (choices: unknown[]) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'gpt-4o-mini', choices });
  const call = { index: 0, id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } };
  const answers: Record<string, unknown[]> = {
    // Text, two choices, neither with a role.
    text: [
      chunk([{ index: 0, delta: { content: 'hi' } }, { index: 1, delta: { content: 'ho' } }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }, { index: 1, delta: {}, finish_reason: 'stop' }]),
    ],
    // A whole call in the first chunk.
    call: [chunk([{ index: 0, delta: { tool_calls: [call] } }]), chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }])],
  };
  const upstream = await startFakeUpstream(t, (request, res) => sendChunks(res, answers[request.body.messages[0].content.split(' ')[0]]!));
  const { client } = await openaiGateway(t, upstream);
  for (const [name, n] of [['text', 2], ['call', 1]] as const) {
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: name }], tools: [tool], n, stream: true });
    const deltas: Array<[number, unknown]> = [];
    for await (const got of stream) for (const choice of got.choices) deltas.push([choice.index, choice.delta.role]);
    for (let index = 0; index < n; index += 1) {
      const roles = deltas.filter(([at]) => at === index).map(([, role]) => role);
      assert.deepEqual([roles[0], roles.filter((role) => role !== undefined).length], ['assistant', 1], `${name} ${index}: ${JSON.stringify(deltas)}`);
    }
    // Live too (a repeat would be a cache hit, whose replay has its roles).
    const final = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${name} helper` }], tools: [tool], n }).finalChatCompletion();
    assert.deepEqual(final.choices.map((choice) => choice.message.role), n === 2 ? ['assistant', 'assistant'] : ['assistant']);
  }
  assert.equal(upstream.requests.length, 4);
});

test("a finish_reason outside the OpenAPI document's (TGI's eos_token, Together's eos, an Anthropic proxy's end_turn, none: a buffered null, a stream's last chunk with null before [DONE]) reaches the client as the document's, the upstream's kept as native_finish_reason; an unknown one is not cached", async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
  // [what the upstream sends, what the client gets, its native_finish_reason, whether a repeat is a cache hit]
  const cases: Array<[unknown, string, unknown, boolean]> = [
    ['stop', 'stop', undefined, true],
    ['eos', 'stop', 'eos', true],
    ['eos_token', 'stop', 'eos_token', true],
    ['end_turn', 'stop', 'end_turn', true],
    ['max_tokens', 'length', 'max_tokens', true],
    ['tool_use', 'tool_calls', 'tool_use', true],
    ['SAFETY', 'content_filter', 'SAFETY', false],
    ['abort', 'stop', 'abort', false],
    [null, 'stop', undefined, false],
  ];
  const upstream = await startFakeUpstream(t, (request, res) => {
    const [sent] = cases[Number(request.body.messages[0].content.split(' ')[0])]!;
    if (request.body.stream !== true) {
      return sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: 'llama3', choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, logprobs: null, finish_reason: sent }], usage });
    }
    const chunk = (choices: unknown[], extra = {}) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'llama3', choices, ...extra });
    // With null, the stream's last choice chunk names no finish, and `[DONE]` follows the usage chunk all the same.
    sendChunks(res, [chunk([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }]), chunk([{ index: 0, delta: {}, finish_reason: sent }]), chunk([], { usage })]);
  });
  const { client } = await openaiGateway(t, upstream);
  for (const [at, [sent, expected, native, cached]] of cases.entries()) {
    for (const route of cached ? ['live', 'exact_cache'] : ['live', 'live']) {
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${at} buffered` }] }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route, `${String(sent)}`);
      assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, JSON.stringify(data));
      assert.deepEqual([data.choices[0]!.finish_reason, (data.choices[0] as unknown as Record<string, unknown>).native_finish_reason], [expected, native]);
    }
    for (const route of cached ? ['live', 'exact_cache'] : ['live', 'live']) {
      const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${at} streamed` }], stream: true }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route, `${String(sent)} streamed`);
      const finishes: unknown[] = [];
      // A replay sends a choice's own fields on its first chunk (docs/gateway.md), the live stream with the finish.
      const natives: unknown[] = [];
      for await (const chunk of stream) {
        assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
        for (const choice of chunk.choices) {
          if (choice.finish_reason !== null) finishes.push(choice.finish_reason);
          const own = (choice as unknown as Record<string, unknown>).native_finish_reason;
          if (own !== undefined) natives.push(own);
        }
      }
      assert.deepEqual([finishes, natives], [[expected], native === undefined ? [] : [native]], `${String(sent)} streamed ${route}`);
    }
    // The SDK's stream helper, which throws "missing finish_reason for choice 0" for a stream without one, assembles it.
    const final = await client.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${at} helper` }] }).finalChatCompletion();
    assert.deepEqual([final.choices[0]!.message.content, final.choices[0]!.finish_reason], ['hi', expected]);
  }
});

/** An upstream answering "hi" with `usage`, buffered or streamed (the usage on a chunk of its own, as OpenAI sends it). */
function upstreamAnsweringHiWith(t: TestContext, usage: unknown) {
  return startFakeUpstream(t, (request, res) => {
    if (request.body.stream !== true) {
      return sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: 'llama3', choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null }, logprobs: null, finish_reason: 'stop' }], usage });
    }
    const chunk = (choices: unknown[], extra = {}) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'llama3', choices, ...extra });
    sendChunks(res, [chunk([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }]), chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]), chunk([], { usage })]);
  });
}

test('a usage whose prompt_tokens_details or completion_tokens_details is null (as some compatible servers send them) reaches the client without them, where the OpenAPI document has an object, buffered, streamed and from the cache', async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: null, completion_tokens_details: null };
  const upstream = await upstreamAnsweringHiWith(t, usage);
  const { client } = await openaiGateway(t, upstream);
  for (const route of ['live', 'exact_cache']) {
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'buffered' }] }).withResponse();
    assert.equal(response.headers.get('x-svc-route'), route);
    assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, JSON.stringify(data));
    assert.deepEqual(data.usage, { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 });
    const { data: stream, response: streamed } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'streamed' }], stream: true, stream_options: { include_usage: true } }).withResponse();
    assert.equal(streamed.headers.get('x-svc-route'), route);
    const usages: unknown[] = [];
    for await (const chunk of stream) {
      assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
      if (chunk.usage) usages.push(chunk.usage);
    }
    assert.deepEqual(usages, [{ prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 }]);
  }
});

test("a usage the upstream streams on a chunk with choices (its finish chunk, as some compatible servers send it, or every chunk, as vLLM's continuous usage stats) reaches a client that asked for usage as the OpenAPI document has it: once, on a last chunk of its own with choices: [], every other chunk's usage null; live as from the cache", async (t) => {
  const chunk = (choices: unknown[], extra = {}) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'llama3', choices, ...extra });
  const usage = (completion: number) => ({ prompt_tokens: 5, completion_tokens: completion, total_tokens: 5 + completion });
  const answers: Record<string, unknown[]> = {
    finish: [chunk([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }]), chunk([{ index: 0, delta: {}, finish_reason: 'stop' }], { usage: usage(2) })],
    every: [
      chunk([{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }], { usage: usage(1) }),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }], { usage: usage(2) }),
      chunk([], { usage: usage(2) }),
    ],
  };
  const upstream = await startFakeUpstream(t, (request, res) => sendChunks(res, answers[request.body.messages[0].content.split(' ')[0]]!));
  const { client } = await openaiGateway(t, upstream);
  for (const name of Object.keys(answers)) {
    for (const route of ['live', 'exact_cache']) {
      const { data: stream, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: name }], stream: true, stream_options: { include_usage: true } }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route, name);
      const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
      for await (const got of stream) chunks.push(got);
      for (const got of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', got), null, JSON.stringify(got));
      const shown = chunks.map((got) => [got.choices.length, got.usage]);
      assert.deepEqual(shown.at(-1), [0, usage(2)], `${name} ${route}: ${JSON.stringify(shown)}`);
      assert.deepEqual(shown.slice(0, -1).filter(([, got]) => got !== null), [], `${name} ${route}: ${JSON.stringify(shown)}`);
    }
    // Without include_usage: no usage at all.
    const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${name} without usage` }], stream: true });
    for await (const got of stream) assert.equal(got.usage, undefined, `${name}: ${JSON.stringify(got)}`);
  }
});

test("a usage detail's count that is not a token count (a string, null, fractional) reaches the client without it, where the OpenAPI document has an integer; the details' other counts and fields are kept, buffered and streamed", async (t) => {
  const usage = {
    prompt_tokens: 5,
    completion_tokens: 1,
    total_tokens: 6,
    prompt_tokens_details: { cached_tokens: '2', audio_tokens: 0, image_tokens: null },
    completion_tokens_details: { reasoning_tokens: 1.5, accepted_prediction_tokens: 0, provider_note: 'x' },
  };
  const upstream = await upstreamAnsweringHiWith(t, usage);
  const { client } = await openaiGateway(t, upstream);
  const kept = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6, prompt_tokens_details: { audio_tokens: 0 }, completion_tokens_details: { accepted_prediction_tokens: 0, provider_note: 'x' } };
  const { data } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'buffered' }] }).withResponse();
  assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, JSON.stringify(data));
  assert.deepEqual(data.usage, kept);
  const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'streamed' }], stream: true, stream_options: { include_usage: true } });
  const usages: unknown[] = [];
  for await (const chunk of stream) {
    assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
    if (chunk.usage) usages.push(chunk.usage);
  }
  assert.deepEqual(usages, [kept]);
});

test("a message's tool_calls, function_call or annotations sent null (as LiteLLM sends them on every answer and delta) reach the client left out, where the OpenAPI document has an array or object, buffered and streamed, live and from the cache", async (t) => {
  const nulls = { tool_calls: null, function_call: null, annotations: null };
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (request.body.stream !== true) {
      return sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: 'llama3', choices: [{ index: 0, message: { role: 'assistant', content: 'hi', refusal: null, ...nulls }, logprobs: null, finish_reason: 'stop' }] });
    }
    const chunk = (choices: unknown[]) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'llama3', choices });
    sendChunks(res, [chunk([{ index: 0, delta: { role: 'assistant', content: 'hi', ...nulls }, finish_reason: null }]), chunk([{ index: 0, delta: { ...nulls }, finish_reason: 'stop' }])]);
  });
  const { client } = await openaiGateway(t, upstream);
  for (const route of ['live', 'exact_cache']) {
    const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'buffered' }] }).withResponse();
    assert.equal(response.headers.get('x-svc-route'), route);
    assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, JSON.stringify(data));
    assert.deepEqual(data.choices[0]!.message, { role: 'assistant', content: 'hi', refusal: null });
    const { data: stream, response: streamed } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'streamed' }], stream: true }).withResponse();
    assert.equal(streamed.headers.get('x-svc-route'), route);
    let text = '';
    for await (const chunk of stream) {
      assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
      for (const choice of chunk.choices) text += choice.delta.content ?? '';
    }
    assert.equal(text, 'hi');
  }
});

test("a buffered choice's index that is not one (a string, a fraction, negative) reaches the client as its position, where the OpenAPI document has an integer, as one sent without an index does", async (t) => {
  const choice = (index: unknown, content: string) => ({ index, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' });
  const upstream = await startFakeUpstream(t, (_request, res) =>
    sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: 'llama3', choices: [choice('0', 'a'), choice(0.5, 'b'), choice(-1, 'c')] }),
  );
  const { client } = await openaiGateway(t, upstream);
  const data = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], n: 3 });
  assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, JSON.stringify(data));
  assert.deepEqual(data.choices.map((got) => [got.index, got.message.content]), [[0, 'a'], [1, 'b'], [2, 'c']]);
});

test("values outside the OpenAPI document (system_fingerprint null, Groq's service_tier on_demand, a message role other than assistant, logprobs {}) reach the client as the document has them, buffered and streamed, live and from the cache; the document's values stay as sent", async (t) => {
  const usage = { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 };
  const logprobs = { content: [{ token: 'hi', logprob: -0.1, bytes: [104, 105], top_logprobs: [] }] };
  // [what the upstream sends, the top-level and choice fields the client gets]
  const cases: Record<string, [Record<string, unknown>, string, unknown, Record<string, unknown>]> = {
    // Groq's tier, and a fingerprint of null (some compatible servers send it so).
    groq: [{ system_fingerprint: null, service_tier: 'on_demand' }, 'model', {}, { system_fingerprint: undefined, service_tier: undefined, logprobs: null }],
    // A role the document has for no answer, logprobs with content only (vLLM sends no refusal).
    partial: [{ system_fingerprint: 42, service_tier: 'flex' }, 'system', logprobs, { system_fingerprint: undefined, service_tier: 'flex', logprobs: { ...logprobs, refusal: null } }],
    // The document's values, as OpenAI sends them.
    openai: [{ system_fingerprint: 'fp_1', service_tier: null }, 'assistant', null, { system_fingerprint: 'fp_1', service_tier: null, logprobs: null }],
  };
  const upstream = await startFakeUpstream(t, (request, res) => {
    const [top, role, sentLogprobs] = cases[request.body.messages[0].content.split(' ')[0]]!;
    if (request.body.stream !== true) {
      return sendJson(res, 200, { id: 'chatcmpl-up', object: 'chat.completion', created: 1700000000, model: 'llama3', ...top, choices: [{ index: 0, message: { role, content: 'hi', refusal: null }, logprobs: sentLogprobs, finish_reason: 'stop' }], usage });
    }
    const chunk = (choices: unknown[], extra = {}) => ({ id: 'chatcmpl-up', object: 'chat.completion.chunk', created: 1700000000, model: 'llama3', ...top, choices, ...extra });
    sendChunks(res, [
      chunk([{ index: 0, delta: { role, content: 'hi' }, logprobs: sentLogprobs, finish_reason: null }]),
      chunk([{ index: 0, delta: { role: null, content: '' }, logprobs: sentLogprobs, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
      chunk([], { usage }),
    ]);
  });
  const { client } = await openaiGateway(t, upstream);
  for (const [name, [, , , expected]] of Object.entries(cases)) {
    for (const route of ['live', 'exact_cache']) {
      const { data, response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${name} buffered` }] }).withResponse();
      assert.equal(response.headers.get('x-svc-route'), route, `${name} buffered`);
      assert.equal(validateAgainst('CreateChatCompletionResponse', data), null, `${name} ${route}: ${JSON.stringify(data)}`);
      const choice = data.choices[0]!;
      assert.deepEqual([data.system_fingerprint, data.service_tier, choice.message.role, choice.logprobs], [expected.system_fingerprint, expected.service_tier, 'assistant', expected.logprobs], `${name} ${route}`);
      const { data: stream, response: streamed } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `${name} streamed` }], stream: true }).withResponse();
      assert.equal(streamed.headers.get('x-svc-route'), route, `${name} streamed`);
      const roles: unknown[] = [];
      for await (const chunk of stream) {
        assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, `${name} ${route}: ${JSON.stringify(chunk)}`);
        assert.deepEqual([chunk.system_fingerprint, chunk.service_tier], [expected.system_fingerprint, route === 'live' ? expected.service_tier : (expected.service_tier ?? undefined)], `${name} ${route}: ${JSON.stringify(chunk)}`);
        for (const choice of chunk.choices) if (choice.delta.role !== undefined) roles.push(choice.delta.role);
      }
      assert.deepEqual(roles, ['assistant'], `${name} ${route}`);
    }
  }
});
