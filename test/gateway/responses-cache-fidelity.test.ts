/**
 * What an exact-cache hit on the responses wire gives back of a live answer: the official `openai` client against a
 * listening svc whose live provider is a fake upstream started by the test. A streamed answer with a reasoning
 * summary, text with a citation, a refusal, a function call and a custom tool call comes back from the cache with
 * the same kinds of events, in the same order, as the live stream, and the same final response; payloads checked
 * against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import type OpenAI from 'openai';
import type { ResponseStreamParams } from 'openai/lib/responses/ResponseStream';
import type { ResponseStreamEvent } from 'openai/resources/responses/responses';
import { sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';
import { validateAgainst } from '../support/openapi.ts';

const WEATHER = {
  type: 'function' as const,
  name: 'get_weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};
const SQL = { type: 'custom' as const, name: 'sql' };

const CITATION = { type: 'url_citation', start_index: 0, end_index: 4, url: 'https://example.com/oslo', title: 'Oslo' };

/** A reasoning model's answer as OpenAI streams it: every kind of item, each with its own events. */
function liveEvents(): Array<Record<string, unknown>> {
  const response = {
    id: 'resp_live',
    object: 'response',
    created_at: 1700000000,
    status: 'in_progress',
    model: 'gpt-4o-mini',
    output: [],
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    temperature: 1,
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
  };
  const reasoning = { id: 'rs_live', type: 'reasoning', summary: [{ type: 'summary_text', text: 'The user asks about Oslo. Answer briefly.' }] };
  const message = {
    id: 'msg_live',
    type: 'message',
    role: 'assistant',
    status: 'completed',
    content: [
      { type: 'output_text', text: 'Oslo is the capital of Norway.', annotations: [CITATION], logprobs: [] },
      { type: 'refusal', refusal: 'I will not say more.' },
    ],
  };
  const call = { id: 'fc_live', type: 'function_call', call_id: 'call_w', name: 'get_weather', arguments: '{"city":"Oslo"}', status: 'completed' };
  const custom = { id: 'ctc_live', type: 'custom_tool_call', call_id: 'call_s', name: 'sql', input: 'SELECT 1' };
  const usage = { input_tokens: 20, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 40, output_tokens_details: { reasoning_tokens: 16 }, total_tokens: 60 };
  const text = { item_id: 'msg_live', output_index: 1, content_index: 0 };
  const refusal = { item_id: 'msg_live', output_index: 1, content_index: 1 };
  const summary = { item_id: 'rs_live', output_index: 0, summary_index: 0 };
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response },
    { type: 'response.in_progress', response },
    { type: 'response.output_item.added', output_index: 0, item: { ...reasoning, summary: [] } },
    { type: 'response.reasoning_summary_part.added', ...summary, part: { type: 'summary_text', text: '' } },
    { type: 'response.reasoning_summary_text.delta', ...summary, delta: 'The user asks about Oslo. ' },
    { type: 'response.reasoning_summary_text.delta', ...summary, delta: 'Answer briefly.' },
    { type: 'response.reasoning_summary_text.done', ...summary, text: reasoning.summary[0]!.text },
    { type: 'response.reasoning_summary_part.done', ...summary, part: reasoning.summary[0] },
    { type: 'response.output_item.done', output_index: 0, item: reasoning },
    { type: 'response.output_item.added', output_index: 1, item: { ...message, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...text, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } },
    { type: 'response.output_text.delta', ...text, delta: 'Oslo is the ', logprobs: [] },
    { type: 'response.output_text.delta', ...text, delta: 'capital of Norway.', logprobs: [] },
    { type: 'response.output_text.annotation.added', ...text, annotation_index: 0, annotation: CITATION },
    { type: 'response.output_text.done', ...text, text: 'Oslo is the capital of Norway.', logprobs: [] },
    { type: 'response.content_part.done', ...text, part: message.content[0] },
    { type: 'response.content_part.added', ...refusal, part: { type: 'refusal', refusal: '' } },
    { type: 'response.refusal.delta', ...refusal, delta: 'I will not say more.' },
    { type: 'response.refusal.done', ...refusal, refusal: 'I will not say more.' },
    { type: 'response.content_part.done', ...refusal, part: message.content[1] },
    { type: 'response.output_item.done', output_index: 1, item: message },
    { type: 'response.output_item.added', output_index: 2, item: { ...call, arguments: '', status: 'in_progress' } },
    { type: 'response.function_call_arguments.delta', item_id: 'fc_live', output_index: 2, delta: '{"city":"Oslo"}' },
    { type: 'response.function_call_arguments.done', item_id: 'fc_live', output_index: 2, name: 'get_weather', arguments: call.arguments },
    { type: 'response.output_item.done', output_index: 2, item: call },
    { type: 'response.output_item.added', output_index: 3, item: { ...custom, input: '' } },
    { type: 'response.custom_tool_call_input.delta', item_id: 'ctc_live', output_index: 3, delta: 'SELECT 1' },
    { type: 'response.custom_tool_call_input.done', item_id: 'ctc_live', output_index: 3, input: 'SELECT 1' },
    { type: 'response.output_item.done', output_index: 3, item: custom },
    { type: 'response.completed', response: { ...response, status: 'completed', output: [reasoning, message, call, custom], usage } },
  ];
  return events.map((event, index) => ({ ...event, sequence_number: index }));
}

/** The event types in order, a run of deltas of one kind counted once (a replay cuts text into its own pieces). */
function shape(events: ResponseStreamEvent[]): string[] {
  return events.map((event) => event.type).filter((type, index, types) => !(type.endsWith('.delta') && types[index - 1] === type));
}

/** A response without what a replay makes anew: its id and its creation time (its items keep theirs). */
function withoutIds(response: unknown): unknown {
  const { id: _id, created_at: _createdAt, ...rest } = response as Record<string, unknown>;
  return JSON.parse(JSON.stringify(rest));
}

/** A fake upstream answering every request with `events` as a responses stream. */
function streamingUpstream(t: TestContext, events: ReadonlyArray<Record<string, unknown>>) {
  return startFakeUpstream(t, (_req, res) => {
    startSse(res);
    for (const event of events) res.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`);
    res.end();
  });
}

/** Streams `params` with the SDK's responses.stream: every event it gave, and its final response. */
async function sdkStream(client: OpenAI, params: ResponseStreamParams) {
  const stream = client.responses.stream(params);
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return { events, final: await stream.finalResponse() };
}

test('a streamed answer comes back from the cache with the live stream events of every kind of item and the same final response', async (t) => {
  const upstream = await streamingUpstream(t, liveEvents());
  const { client } = await openaiGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: 'What is the capital of Norway?', tools: [WEATHER, SQL], reasoning: { summary: 'auto' as const } };
  const streamed = async () => {
    const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
    const events: ResponseStreamEvent[] = [];
    for await (const event of data) events.push(event);
    return { events, route: response.headers.get('x-svc-route') };
  };

  const live = await streamed();
  assert.equal(live.route, 'live');
  const replay = await streamed();
  assert.equal(replay.route, 'exact_cache');

  assert.deepEqual(shape(replay.events), shape(live.events));
  for (const event of replay.events) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
  const final = (replay.events.at(-1) as { response: { id: string; output: Array<{ id: string }> } }).response;
  assert.equal((replay.events[0] as { response: { id: string } }).response.id, final.id);
  for (const event of replay.events as unknown as Array<{ type: string; item_id?: string; output_index?: number; item?: { id: string } }>) {
    if (event.output_index === undefined) continue;
    assert.equal(event.item_id ?? event.item?.id, final.output[event.output_index]!.id, event.type);
  }
  // What a client reads from the deltas, joined, is what it read live.
  const joined = (events: ResponseStreamEvent[], type: string) =>
    events
      .filter((event) => event.type === type)
      .map((event) => (event as { delta: string }).delta)
      .join('');
  for (const type of ['response.reasoning_summary_text.delta', 'response.output_text.delta', 'response.refusal.delta', 'response.function_call_arguments.delta', 'response.custom_tool_call_input.delta']) {
    assert.equal(joined(replay.events, type), joined(live.events, type), type);
  }

  // The SDK's final response, streamed and buffered, is the live one but for its id and creation time.
  const liveFinal = (live.events.at(-1) as { response: unknown }).response;
  assert.deepEqual(withoutIds(final), withoutIds(liveFinal));
  const stream = client.responses.stream(params);
  const accumulated = await stream.finalResponse();
  const buffered = await client.responses.create(params).withResponse();
  assert.equal(buffered.response.headers.get('x-svc-route'), 'exact_cache');
  assert.deepEqual(withoutIds(buffered.data), withoutIds({ ...(liveFinal as object), output_text: 'Oslo is the capital of Norway.' }));
  assert.equal(accumulated.output.length, 4);
  assert.equal(validateAgainst('Response', buffered.data), null);
});

test("a hit echoes the request it serves (metadata, user, safety_identifier, prompt_cache_key), not the one that filled the entry, and completes when it is created", async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    const body = request.body as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    const item = { id: 'msg_live', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello.', annotations: [], logprobs: [] }] };
    sendJson(res, 200, {
      id: 'resp_live',
      object: 'response',
      // An answer that took a while: made 30 s before it completed.
      created_at: now - 30,
      completed_at: now,
      status: 'completed',
      model: 'gpt-4o-mini',
      output: [item],
      error: null,
      incomplete_details: null,
      instructions: null,
      parallel_tool_calls: true,
      temperature: 1,
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
      metadata: body.metadata ?? {},
      user: body.user ?? null,
      safety_identifier: body.safety_identifier ?? null,
      prompt_cache_key: body.prompt_cache_key ?? null,
      store: body.store ?? true,
      usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 7 },
    });
  });
  const { client } = await openaiGateway(t, upstream);
  const question = { model: 'gpt-4o-mini', input: 'Say hello.' };
  await client.responses.create({ ...question, metadata: { ticket: 'alice-1' }, user: 'alice', safety_identifier: 'alice-hash', prompt_cache_key: 'alice-key', store: true });

  const { data: buffered, response } = await client.responses.create({ ...question, metadata: { ticket: 'bob-7' }, safety_identifier: 'bob-hash' }).withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  const echoed = (answer: Record<string, unknown>) => ({
    metadata: answer.metadata,
    user: answer.user,
    safety_identifier: answer.safety_identifier,
    prompt_cache_key: answer.prompt_cache_key,
    store: answer.store,
  });
  assert.deepEqual(echoed(buffered as unknown as Record<string, unknown>), { metadata: { ticket: 'bob-7' }, user: null, safety_identifier: 'bob-hash', prompt_cache_key: null, store: true });
  assert.equal(buffered.completed_at, buffered.created_at);

  const { data: stream } = await client.responses.create({ ...question, user: 'carol', prompt_cache_key: 'carol-key', store: true, stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const created = (events[0] as unknown as { response: Record<string, unknown> }).response;
  const completed = (events.at(-1) as unknown as { response: Record<string, unknown> }).response;
  assert.equal(created.completed_at, null);
  assert.equal(completed.completed_at, completed.created_at);
  for (const answer of [created, completed]) assert.deepEqual(echoed(answer), { metadata: {}, user: 'carol', safety_identifier: null, prompt_cache_key: 'carol-key', store: true });
  for (const event of events) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
});

test("a hit's output items keep the ids the upstream gave them, so a next turn that sends them back as input is understood by an upstream that stored them; the response id is the hit's own", async (t) => {
  // A store: true upstream, as OpenAI's: an input item with an id is looked up among the items it gave out (a
  // reasoning item's encrypted reasoning is found by its id), and an id it never gave out is a 404.
  const issued = new Set<string>();
  let turn = 0;
  const upstream = await startFakeUpstream(t, (request, res) => {
    const body = request.body as { input: unknown; stream?: boolean };
    for (const item of Array.isArray(body.input) ? (body.input as Array<{ id?: string }>) : []) {
      if (item.id !== undefined && !issued.has(item.id)) {
        sendJson(res, 404, { error: { message: `Item with id '${item.id}' not found.`, type: 'invalid_request_error', param: 'input', code: null } });
        return;
      }
    }
    turn += 1;
    const reasoning = { id: `rs_up${turn}`, type: 'reasoning', summary: [] };
    const message = { id: `msg_up${turn}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `Answer ${turn}.`, annotations: [], logprobs: [] }] };
    issued.add(reasoning.id).add(message.id);
    const response = { id: `resp_up${turn}`, object: 'response', created_at: 1700000000, status: 'completed', model: 'o4-mini', output: [reasoning, message], error: null, incomplete_details: null, instructions: null, metadata: {}, parallel_tool_calls: true, temperature: 1, tool_choice: 'auto', tools: [], top_p: 1, store: true, usage: { input_tokens: 5, input_tokens_details: { cached_tokens: 0 }, output_tokens: 2, output_tokens_details: { reasoning_tokens: 1 }, total_tokens: 7 } };
    if (!body.stream) return sendJson(res, 200, response);
    startSse(res);
    const events = [
      { type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } },
      { type: 'response.output_item.added', output_index: 0, item: reasoning },
      { type: 'response.output_item.done', output_index: 0, item: reasoning },
      { type: 'response.output_item.added', output_index: 1, item: { ...message, status: 'in_progress', content: [] } },
      { type: 'response.output_item.done', output_index: 1, item: message },
      { type: 'response.completed', response },
    ];
    for (const [index, event] of events.entries()) res.write(`event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: index })}\n\n`);
    res.end();
  });
  const { client } = await openaiGateway(t, upstream);
  const question = { model: 'o4-mini', input: [{ role: 'user' as const, content: 'Think, then answer.' }], store: true };
  const live = await client.responses.create(question);
  const { data: hit, response } = await client.responses.create(question).withResponse();
  assert.equal(response.headers.get('x-svc-route'), 'exact_cache');
  assert.notEqual(hit.id, live.id);
  assert.deepEqual(
    hit.output.map((item) => item.id),
    live.output.map((item) => item.id),
  );
  const next = await client.responses.create({ ...question, input: [...question.input, ...(hit.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'And then?' }] });
  assert.equal(next.output_text, 'Answer 2.');

  // A streamed hit's items, announced and final, have them too.
  const { data: stream } = await client.responses.create({ ...question, stream: true }).withResponse();
  const events: ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const final = (events.at(-1) as { response: { output: Array<{ id: string }> } }).response;
  assert.deepEqual(
    final.output.map((item) => item.id),
    live.output.map((item) => item.id),
  );
  for (const event of events as unknown as Array<{ item?: { id: string } }>) if (event.item) assert.ok(issued.has(event.item.id));
});

test("a stream whose response.completed has output: [] after its items were streamed whole answers with the streamed items, live, recorded and from the cache, streamed and buffered", async (t) => {
  // Some compatible upstreams leave the terminal response's output empty: the items the stream gave are the answer.
  const events = liveEvents();
  const completed = events.at(-1)! as { response: Record<string, unknown> };
  const full = completed.response.output;
  completed.response = { ...completed.response, output: [] };
  const upstream = await streamingUpstream(t, events);
  const { client } = await openaiGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: 'What is the capital of Norway, with the items streamed?', tools: [WEATHER, SQL], reasoning: { summary: 'auto' as const } };
  const streamed = () => sdkStream(client, params);

  const live = await streamed();
  const outputOf = (seen: ResponseStreamEvent[]) => JSON.parse(JSON.stringify((seen.at(-1) as { response: { output: unknown } }).response.output));
  assert.deepEqual(outputOf(live.events), full);
  assert.equal(live.final.output.length, 4);
  const replay = await streamed();
  assert.deepEqual(shape(replay.events), shape(live.events));
  assert.deepEqual(outputOf(replay.events), full);
  assert.deepEqual(withoutIds(replay.final), withoutIds(live.final));
  const buffered = await client.responses.create(params).withResponse();
  assert.equal(buffered.response.headers.get('x-svc-route'), 'exact_cache');
  assert.deepEqual(JSON.parse(JSON.stringify(buffered.data.output)), full);
  assert.equal(buffered.data.output_text, 'Oslo is the capital of Norway.');
  assert.equal(upstream.requests.length, 1);
});

test("a stream whose response.completed leaves out some of the items it streamed answers with every streamed item in output_index order, the terminal's own version of the ones it has, live and from the cache, streamed and buffered", async (t) => {
  // An upstream whose terminal output keeps only the message: the reasoning, the function call and the custom tool
  // call the stream gave whole were dropped from it, so the SDK's final response (the terminal event's) lacked them.
  const events = liveEvents();
  const completed = events.at(-1)! as { response: Record<string, unknown> };
  const full = completed.response.output as Array<Record<string, unknown>>;
  // The terminal's message differs from its output_item.done (a status the stream did not give): its own version wins.
  const finalMessage = { ...full[1]!, status: 'completed', extra_from_terminal: true };
  completed.response = { ...completed.response, output: [finalMessage] };
  const expected = [full[0], finalMessage, full[2], full[3]];
  const upstream = await streamingUpstream(t, events);
  const { client } = await openaiGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: 'What is the capital of Norway, with some items left out?', tools: [WEATHER, SQL], reasoning: { summary: 'auto' as const } };
  const streamed = () => sdkStream(client, params);

  const plain = (value: unknown) => JSON.parse(JSON.stringify(value));
  const outputOf = (seen: ResponseStreamEvent[]) => plain((seen.at(-1) as { response: { output: unknown } }).response.output);
  const ids = ['rs_live', 'msg_live', 'fc_live', 'ctc_live'];
  const live = await streamed();
  assert.deepEqual(outputOf(live.events), expected);
  assert.deepEqual(
    live.final.output.map((item) => item.id),
    ids,
  );
  const replay = await streamed();
  assert.deepEqual(shape(replay.events), shape(live.events));
  assert.deepEqual(outputOf(replay.events), expected);
  assert.deepEqual(withoutIds(replay.final), withoutIds(live.final));
  const buffered = await client.responses.create(params).withResponse();
  assert.equal(buffered.response.headers.get('x-svc-route'), 'exact_cache');
  assert.deepEqual(plain(buffered.data.output), expected);
  assert.equal(upstream.requests.length, 1);
});

test("a streamed hit on an answer asked with message.output_text.logprobs gives each token's log probabilities on the text deltas and all of them on output_text.done, as the live stream did", async (t) => {
  const tokens = ['Oslo', ' is', ' the', ' capital', '.'];
  const logprobs = tokens.map((token, index) => ({ token, logprob: -0.1 * (index + 1), bytes: [...Buffer.from(token)], top_logprobs: [] }));
  const text = tokens.join('');
  const part = { type: 'output_text', text, annotations: [], logprobs };
  const message = { id: 'msg_lp', type: 'message', role: 'assistant', status: 'completed', content: [part] };
  const response = { id: 'resp_lp', object: 'response', created_at: 1700000000, status: 'in_progress', model: 'gpt-4o-mini', output: [], error: null, incomplete_details: null, instructions: null, metadata: {}, parallel_tool_calls: true, temperature: 1, tool_choice: 'auto', tools: [], top_p: 1 };
  const usage = { input_tokens: 5, input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 10 };
  const at = { item_id: 'msg_lp', output_index: 0, content_index: 0 };
  const events: Array<Record<string, unknown>> = [
    { type: 'response.created', response },
    { type: 'response.output_item.added', output_index: 0, item: { ...message, status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', ...at, part: { ...part, text: '', logprobs: [] } },
    ...logprobs.map((logprob) => ({ type: 'response.output_text.delta', ...at, delta: logprob.token, logprobs: [logprob] })),
    { type: 'response.output_text.done', ...at, text, logprobs },
    { type: 'response.content_part.done', ...at, part },
    { type: 'response.output_item.done', output_index: 0, item: message },
    { type: 'response.completed', response: { ...response, status: 'completed', output: [message], usage } },
  ];
  const upstream = await streamingUpstream(t, events.map((event, index) => ({ ...event, sequence_number: index })));
  const { client } = await openaiGateway(t, upstream);
  const params = { model: 'gpt-4o-mini', input: 'The capital of Norway, with log probabilities?', include: ['message.output_text.logprobs' as const], stream: true as const };
  const streamed = async () => {
    const { data, response } = await client.responses.create(params).withResponse();
    const seen: ResponseStreamEvent[] = [];
    for await (const event of data) seen.push(event);
    return { events: seen, route: response.headers.get('x-svc-route') };
  };
  /** What a client reads of the log probabilities: each text delta's, and the text's done event's. */
  const logprobsOf = (seen: ResponseStreamEvent[]) => ({
    deltas: seen.flatMap((event) => (event.type === 'response.output_text.delta' ? [{ delta: event.delta, logprobs: event.logprobs }] : [])),
    done: seen.flatMap((event) => (event.type === 'response.output_text.done' ? [event.logprobs] : [])),
  });

  const live = await streamed();
  assert.equal(live.route, 'live');
  const replay = await streamed();
  assert.equal(replay.route, 'exact_cache');
  assert.deepEqual(logprobsOf(replay.events), logprobsOf(live.events));
  for (const event of replay.events) assert.equal(validateAgainst('ResponseStreamEvent', event), null, event.type);
});

test("an answer to a store: false request never serves one that stores (its items were never stored upstream, so a next turn naming them would fail), and store: true and an unset store share entries", async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    const body = request.body as Record<string, unknown>;
    const item = { id: `msg_${upstream.requests.length}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello.', annotations: [], logprobs: [] }] };
    sendJson(res, 200, { id: 'resp_live', object: 'response', created_at: 1700000000, status: 'completed', model: 'gpt-4o-mini', output: [item], store: body.store ?? true, usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 } });
  });
  const { client } = await openaiGateway(t, upstream);
  const question = { model: 'gpt-4o-mini', input: 'Say hello, store or not.' };
  const routeOf = async (store: boolean | undefined) => {
    const { response } = await client.responses.create({ ...question, ...(store === undefined ? {} : { store }) }).withResponse();
    return response.headers.get('x-svc-route');
  };
  assert.equal(await routeOf(false), 'live');
  assert.equal(await routeOf(true), 'live');
  assert.equal(await routeOf(undefined), 'exact_cache');
  assert.equal(await routeOf(false), 'exact_cache');
  assert.equal(upstream.requests.length, 2);
});
