/**
 * The deterministic mock: text derived from the input, tool calls generated from the declared schemas under
 * tool_choice / parallel_tool_calls, realistic stream chunk sequences, behaviour by model name, and embeddings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import { createMockProvider, mockBehaviour, mockEmbedding } from '../../../src/gateway/providers/mock.ts';
import { ProviderError, type ChatChunk, type ChatRequest } from '../../../src/gateway/providers/types.ts';
import { compileTools } from '../../../src/gateway/tool-schemas.ts';
import { countChatTokens, countTokens } from '../../../src/gateway/tokens.ts';
import { validateAgainst } from '../../support/openapi.ts';
import { build } from '../../support/build.ts';

const mock = createMockProvider({ now: () => 1_700_000_000_000 });
const ctx = () => ({ signal: new AbortController().signal });

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city.',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 3 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer', minimum: 1, maximum: 7 },
        when: { type: 'string', format: 'date' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
        optional: { type: 'number' },
      },
      required: ['city', 'unit', 'days', 'when', 'tags'],
      additionalProperties: false,
    },
  },
};
const time = {
  type: 'function' as const,
  function: { name: 'get_time', parameters: { type: 'object', properties: { zone: { $ref: '#/$defs/zone' } }, required: ['zone'], $defs: { zone: { type: 'string', enum: ['UTC', 'CET'] } } } },
};

async function collect(stream: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const out: ChatChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

test('text answers are deterministic, mention the last user message and validate against the official schema', async () => {
  const request: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'What is a haiku?' }] };
  const a = await mock.chat(request, ctx());
  const b = await mock.chat(request, ctx());
  assert.equal(validateAgainst('CreateChatCompletionResponse', a), null);
  assert.equal(a.choices[0]!.message.content, b.choices[0]!.message.content);
  assert.match(a.choices[0]!.message.content!, /What is a haiku\?/);
  assert.equal(a.choices[0]!.finish_reason, 'stop');
  const other = await mock.chat({ ...request, messages: [{ role: 'user', content: 'Something else' }] }, ctx());
  assert.notEqual(other.choices[0]!.message.content, a.choices[0]!.message.content);
  assert.equal(a.usage!.prompt_tokens, countChatTokens(request));
  assert.equal(a.usage!.completion_tokens, countTokens(a.choices[0]!.message.content!));
  assert.equal(a.usage!.total_tokens, a.usage!.prompt_tokens + a.usage!.completion_tokens);
  assert.equal(a.created, 1_700_000_000);
});

test('declared tools are called with arguments that satisfy their JSON Schema', async () => {
  const answer = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'weather in Paris?' }], tools: [weather, time] }, ctx());
  assert.equal(validateAgainst('CreateChatCompletionResponse', answer), null);
  const choice = answer.choices[0]!;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls!.length, 1, 'no tool named in the message: the first tool');
  const call = choice.message.tool_calls![0]!;
  assert.match(call.id, /^call_/);
  assert.equal(call.function.name, 'get_weather');
  const args = JSON.parse(call.function.arguments);
  const validate = new Ajv({ strict: false }).compile(weather.function.parameters);
  assert.ok(validate(args), JSON.stringify(validate.errors));
  assert.equal(args.unit, 'celsius', 'enums take the first value');
  assert.ok(!('optional' in args), 'only required properties');
  const refArgs = JSON.parse((await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], tools: [time] }, ctx())).choices[0]!.message.tool_calls![0]!.function.arguments);
  assert.deepEqual(refArgs, { zone: 'UTC' }, 'local $ref resolved');
});

test("a $ref is followed as ajv follows it, through a list too (#/definitions/u/anyOf/1), where the mock wrote null, which the tool's schema refuses", async () => {
  const parameters = { type: 'object', properties: { v: { $ref: '#/definitions/u/anyOf/1' } }, required: ['v'], definitions: { u: { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 7 }] } } };
  const answer = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters } }] }, ctx());
  const args = JSON.parse(answer.choices[0]!.message.tool_calls![0]!.function.arguments);
  const validate = new Ajv({ strict: false }).compile(parameters);
  assert.ok(validate(args), `${JSON.stringify(args)}: ${JSON.stringify(validate.errors)}`);
});

test("OpenAPI 3.0's nullable: true beside a type is a null the mock may write, as svc's check reads it: a recursive list of OpenAPI's shape ends in null (the mock wrote a list 11 deep and a null where a string belongs, which the check refused)", async () => {
  const node = { type: 'object', nullable: true, required: ['value', 'next'], properties: { value: { type: 'string' }, next: { $ref: '#/components/schemas/Node' } } };
  const tool = { type: 'function' as const, function: { name: 'f', parameters: { type: 'object', properties: { list: { $ref: '#/components/schemas/Node' } }, required: ['list'], components: { schemas: { Node: node } } } } };
  const answer = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }], tools: [tool] }, ctx());
  const call = answer.choices[0]!.message.tool_calls![0]!;
  assert.equal(compileTools([tool]).check(call, 0), null, call.function.arguments);
  const { list } = JSON.parse(call.function.arguments);
  assert.equal(list.value, 'sample value', 'a list, not null, before the sampler goes shallow');
});

test('tool_choice and parallel_tool_calls decide which and how many tools are called', async () => {
  const messages = [{ role: 'user', content: 'call get_weather and get_time please' }];
  const names = async (extra: Partial<ChatRequest>) =>
    ((await mock.chat({ model: 'gpt-4o', messages, tools: [weather, time], ...extra }, ctx())).choices[0]!.message.tool_calls ?? []).map((c) => c.function.name);
  assert.deepEqual(await names({}), ['get_weather', 'get_time'], 'parallel calls by default for every tool named');
  assert.deepEqual(await names({ parallel_tool_calls: false }), ['get_weather']);
  assert.deepEqual(await names({ tool_choice: 'none' }), []);
  assert.deepEqual(await names({ tool_choice: { type: 'function', function: { name: 'get_time' } } }), ['get_time']);
  await assert.rejects(names({ tool_choice: { type: 'function', function: { name: 'nope' } } }), (e: unknown) => e instanceof ProviderError && e.kind === 'rejected');
  // After tool results, `auto` answers in text; `required` keeps calling.
  const afterTools = [
    ...messages,
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function' as const, function: { name: 'get_time', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '12:00 UTC' },
  ];
  const text = await mock.chat({ model: 'gpt-4o', messages: afterTools, tools: [weather, time] }, ctx());
  assert.equal(text.choices[0]!.finish_reason, 'stop');
  assert.match(text.choices[0]!.message.content!, /12:00 UTC/);
  const again = await mock.chat({ model: 'gpt-4o', messages: afterTools, tools: [weather, time], tool_choice: 'required' }, ctx());
  assert.equal(again.choices[0]!.finish_reason, 'tool_calls');
});

test('structured outputs, max tokens, stop and n shape the text answer', async () => {
  const schema = { type: 'object', properties: { title: { type: 'string' }, score: { type: 'number', minimum: 0, maximum: 1 } }, required: ['title', 'score'], additionalProperties: false };
  const structured = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'rate it' }], response_format: { type: 'json_schema', json_schema: { name: 'r', schema, strict: true } } }, ctx());
  const parsed = JSON.parse(structured.choices[0]!.message.content!);
  assert.ok(new Ajv({ strict: false }).validate(schema, parsed));
  const jsonObject = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'json_object' } }, ctx());
  assert.equal(typeof JSON.parse(jsonObject.choices[0]!.message.content!).answer, 'string');
  const short = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'a long question about many things' }], max_completion_tokens: 3 }, ctx());
  assert.equal(short.choices[0]!.finish_reason, 'length');
  assert.equal(short.usage!.completion_tokens, 3);
  const stopped = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], stop: ':' }, ctx());
  assert.doesNotMatch(stopped.choices[0]!.message.content!, /:/);
  const many = await mock.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }], n: 3 }, ctx());
  assert.deepEqual(many.choices.map((c) => c.index), [0, 1, 2]);
  assert.notEqual(many.choices[0]!.message.content, many.choices[1]!.message.content);
});

test('a streamed text answer is a role chunk, content deltas, a finish chunk and a usage chunk', async () => {
  const request: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Tell me something.' }], stream: true, stream_options: { include_usage: true } };
  const chunks = await collect(await mock.streamChat(request, ctx()));
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
  assert.deepEqual(chunks[0]!.choices[0]!.delta, { role: 'assistant', content: '', refusal: null });
  const finish = chunks[chunks.length - 2]!;
  assert.equal(finish.choices[0]!.finish_reason, 'stop');
  assert.deepEqual(finish.choices[0]!.delta, {});
  const usageChunk = chunks[chunks.length - 1]!;
  assert.deepEqual(usageChunk.choices, []);
  const buffered = await mock.chat(request, ctx());
  assert.deepEqual(usageChunk.usage, buffered.usage);
  assert.ok(chunks.slice(0, -1).every((c) => c.usage === null), 'usage is null on every other chunk');
  const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
  assert.equal(text, buffered.choices[0]!.message.content);
  assert.ok(chunks.length > 5, 'content arrives in several deltas');
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1);
  const plain = await collect(await mock.streamChat({ ...request, stream_options: undefined }, ctx()));
  // The usage chunk always comes, as svc asks every live upstream for it (the wire shows it only to a client that
  // asked); `usage: null` on the other chunks only when include_usage is asked.
  assert.ok(plain.slice(0, -1).every((c) => !('usage' in c)), 'usage: null on the other chunks only with include_usage');
  assert.deepEqual(plain.at(-1)!.usage, buffered.usage);
  assert.equal(plain[plain.length - 2]!.choices[0]!.finish_reason, 'stop');
});

test('streamed tool calls send index, id and name first, then the arguments in pieces', async () => {
  const chunks = await collect(await mock.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'get_weather and get_time' }], tools: [weather, time], stream: true }, ctx()));
  for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null);
  const fragments = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
  const assembled = new Map<number, { id?: string; name?: string; args: string }>();
  let argumentPieces = 0;
  for (const fragment of fragments) {
    const entry = assembled.get(fragment.index) ?? { args: '' };
    if (fragment.id) {
      assert.equal(entry.args, '', 'id and name come before any argument piece');
      entry.id = fragment.id;
      entry.name = fragment.function?.name;
    }
    if (fragment.function?.arguments) {
      entry.args += fragment.function.arguments;
      argumentPieces += 1;
    }
    assembled.set(fragment.index, entry);
  }
  assert.deepEqual([...assembled.values()].map((e) => e.name), ['get_weather', 'get_time']);
  assert.ok(argumentPieces > 4, 'arguments are split across chunks');
  for (const entry of assembled.values()) JSON.parse(entry.args);
  assert.equal(chunks[chunks.length - 2]!.choices[0]!.finish_reason, 'tool_calls', 'the finish chunk, then the usage chunk');
});

test('model names choose failures: 429, 5xx, timeout, network, 400 and slow', async () => {
  const fail = async (model: string) => {
    try {
      await mock.chat({ model, messages: [{ role: 'user', content: 'x' }] }, ctx());
    } catch (error) {
      return error as ProviderError;
    }
    throw new Error('expected a failure');
  };
  const limited = await fail('gpt-4o-mock-429');
  assert.equal(limited.kind, 'rate_limited');
  assert.equal(limited.retryAfterSeconds, 1);
  assert.equal((await fail('mock-5xx')).kind, 'upstream_error');
  assert.equal((await fail('mock-timeout')).kind, 'timeout');
  assert.equal((await fail('mock-network')).kind, 'network');
  assert.equal((await fail('mock-400')).kind, 'rejected');
  await assert.rejects(mock.streamChat({ model: 'mock-429', messages: [] }, ctx()), (e: unknown) => e instanceof ProviderError && e.kind === 'rate_limited');
  assert.equal(mockBehaviour('gpt-4o-mock-slow').slowMs, 2000);
  const started = Date.now();
  await mock.chat({ model: 'gpt-4o-mock-slow-120', messages: [{ role: 'user', content: 'x' }] }, ctx());
  assert.ok(Date.now() - started >= 110);
  const controller = new AbortController();
  const slow = mock.chat({ model: 'mock-slow-5000', messages: [] }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 20);
  await assert.rejects(slow, (e: unknown) => e instanceof ProviderError && e.kind === 'aborted');
});

test('mock-malformed and mock-truncated streams break off with bad_response after a few chunks', async () => {
  for (const model of ['gpt-4o-mock-malformed', 'gpt-4o-mock-truncated']) {
    const stream = await mock.streamChat({ model, messages: [{ role: 'user', content: 'a fairly long question for several chunks' }], stream: true }, ctx());
    const seen: ChatChunk[] = [];
    await assert.rejects(
      (async () => {
        for await (const chunk of stream) seen.push(chunk);
      })(),
      (e: unknown) => e instanceof ProviderError && e.kind === 'bad_response',
    );
    assert.ok(seen.length > 0 && seen.length <= 3, model);
    assert.ok(seen.every((c) => c.choices.every((choice) => choice.finish_reason === null)), 'no finish chunk');
  }
});

test('mock embeddings are unit vectors, stable per input, honouring dimensions and batch limits', async () => {
  const result = await mock.embed({ model: 'text-embedding-3-large', input: ['a', 'b'] }, ctx());
  assert.equal(result.vectors[0]!.length, 3072);
  for (const vector of result.vectors) assert.ok(Math.abs(Math.hypot(...vector) - 1) < 1e-5);
  assert.deepEqual(result.vectors[0], mockEmbedding('a', 3072));
  assert.notDeepEqual(result.vectors[0], result.vectors[1]);
  const small = await mock.embed({ model: 'text-embedding-3-small', input: [[1, 2]], dimensions: 10 }, ctx());
  assert.equal(small.vectors[0]!.length, 10);
  assert.equal(small.usage.prompt_tokens, 2);
  await assert.rejects(mock.embed({ model: 'emb-mock-batch-2', input: ['a', 'b', 'c'] }, ctx()), (e: unknown) => e instanceof ProviderError && e.kind === 'batch_too_large');
});

test("the mock's arguments and structured outputs satisfy a schema naming Object.prototype members (a property toString, constructor, __proto__; a format toString): the sampler read inherited members, writing a function (dropped) or {} where the schema asks a string, and a __proto__ set the value's prototype, so svc refused the mock's call (502)", async (t) => {
  const { app } = await build(t);
  // Own members only, as svc's check counts them (tool-schemas.ts).
  const ajv = new Ajv({ strict: false, ownProperties: true });
  const schemas = [
    ...['toString', 'constructor', '__proto__', 'hasOwnProperty'].map((name) => ({ type: 'object', required: [name] })),
    ...['toString', 'constructor', 'valueOf'].map((name) => ({ type: 'object', properties: { [name]: { type: 'integer' } }, minProperties: 1 })),
    ...['toString', 'constructor', '__proto__'].map((format) => ({ type: 'object', properties: { a: { type: 'string', format } }, required: ['a'] })),
  ];
  for (const schema of schemas) {
    const what = JSON.stringify(schema);
    const called = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters: schema } }], tool_choice: 'required' },
    });
    assert.equal(called.statusCode, 200, `${what}: ${called.body}`);
    const args = JSON.parse(JSON.parse(called.body).choices[0].message.tool_calls[0].function.arguments);
    assert.ok(ajv.validate(schema, args), `${what}: ${JSON.stringify(args)}`);
    const structured = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'r', schema } } },
    });
    const content = JSON.parse(JSON.parse(structured.body).choices[0].message.content);
    assert.ok(ajv.validate(schema, content), `${what}: ${JSON.stringify(content)}`);
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});
