/**
 * The exact cache's identity across the three wires against a live fake upstream, counting the upstream's calls: a
 * request differing in a field that can change the answer goes upstream; one differing only in key order, whitespace,
 * escapes or a field docs/gateway.md lists as not changing the answer is served the stored one. And a stored answer
 * naming an upstream object that has expired since (a chat answer's audio, a message's container) is not served, nor
 * stored one of a request whose provider runs something at request time (a web search, code in a container).
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { build, json } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream, type FakeUpstream, type RecordedRequest } from '../support/fake-upstream.ts';

type Wire = 'chat/completions' | 'messages' | 'responses';
type Variant = [name: string, body: unknown, headers?: Record<string, string>];

/** The upstream's answer to its n-th call, which says which call it was. */
function answerOf(wire: Wire, request: RecordedRequest, n: number): Record<string, unknown> {
  const text = `answer ${n}`;
  if (wire === 'chat/completions') return completion(text, request.body.model);
  if (wire === 'messages') {
    return { id: 'msg_up', type: 'message', role: 'assistant', model: request.body.model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 12, output_tokens: 5 } };
  }
  const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
  return { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'completed', model: request.body.model, output: [item], usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12 } };
}

async function gatewayFor(t: TestContext, wire: Wire, answer?: (request: RecordedRequest, n: number) => Record<string, unknown>) {
  const upstream: FakeUpstream = await startFakeUpstream(t, (request, res) => sendJson(res, 200, (answer ?? ((r, n) => answerOf(wire, r, n)))(request, upstream.requests.length)));
  const env: Record<string, string> =
    wire === 'messages'
      ? { MESSAGES_API_KEY: 'sk-messages-upstream', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') }
      : { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl };
  const { app } = await build(t, { env });
  const send = async (body: unknown, headers: Record<string, string> = {}) => {
    const calls = upstream.requests.length;
    const response = await app.inject({
      method: 'POST',
      url: `/v1/${wire}`,
      payload: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
    });
    assert.equal(response.statusCode, 200, response.body);
    return { response, wentUpstream: upstream.requests.length > calls };
  };
  return { send, upstream, app };
}

/** Each variant of `base` that must go upstream does, and each that must share the entry is served from it. */
async function expectIdentity(t: TestContext, wire: Wire, base: Record<string, unknown>, apart: Variant[], shared: Variant[]) {
  const { send } = await gatewayFor(t, wire);
  assert.equal((await send(base)).wentUpstream, true);
  for (const [name, body, headers] of apart) {
    const { response, wentUpstream } = await send(body, headers);
    assert.equal(wentUpstream, true, `${name} must key apart (served ${response.headers['x-svc-route']})`);
  }
  for (const [name, body, headers] of shared) {
    const { response, wentUpstream } = await send(body, headers);
    assert.equal(wentUpstream, false, `${name} must share the entry`);
    assert.equal(response.headers['x-svc-route'], 'exact_cache', name);
  }
}

/** The same JSON text with its members in reverse order, indented, and a letter of a string written as an escape. */
function sameRequestOtherwiseWritten(base: Record<string, unknown>, letter: string): Variant[] {
  const reversed = Object.fromEntries(Object.entries(base).reverse());
  const text = JSON.stringify(base);
  assert.ok(text.includes(`"${letter}`), 'the escaped letter starts a string of the request');
  return [
    ['members in another order', JSON.stringify(reversed)],
    ['indented', JSON.stringify(base, null, 2)],
    ['a letter written as an escape', text.replace(`"${letter}`, `"\\u${letter.charCodeAt(0).toString(16).padStart(4, '0')}`)],
  ];
}

test('chat completions: every field that can change the answer keys apart; order, whitespace and the fields that cannot share', async (t) => {
  const tool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } };
  const base = { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }], tools: [tool] };
  await expectIdentity(
    t,
    'chat/completions',
    base,
    [
      ['user content', { ...base, messages: [base.messages[0], { role: 'user', content: 'hi!' }] }],
      ['user content as parts', { ...base, messages: [base.messages[0], { role: 'user', content: [{ type: 'text', text: 'hi' }] }] }],
      ['system message', { ...base, messages: [{ role: 'system', content: 'be long' }, base.messages[1]] }],
      ['developer for system', { ...base, messages: [{ role: 'developer', content: 'be brief' }, base.messages[1]] }],
      ['a message name', { ...base, messages: [base.messages[0], { ...base.messages[1], name: 'ann' }] }],
      ['strict tool', { ...base, tools: [{ ...tool, function: { ...tool.function, strict: true } }] }],
      ['no tools', { model: base.model, messages: base.messages }],
      ['tool_choice none', { ...base, tool_choice: 'none' }],
      ['response_format json_schema', { ...base, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } } }],
      ['top_p', { ...base, top_p: 0.5 }],
      ['max_tokens', { ...base, max_tokens: 5 }],
      ['max_completion_tokens', { ...base, max_completion_tokens: 5 }],
      ['stop as a string', { ...base, stop: 'END' }],
      ['n', { ...base, n: 2 }],
      ['presence_penalty', { ...base, presence_penalty: 1 }],
      ['modalities and audio', { ...base, modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }],
      ['prediction', { ...base, prediction: { type: 'content', content: 'hello' } }],
      ['a field svc does not know', { ...base, web_search_options: {} }],
      ['app', base, { 'x-svc-app': 'other-app' }],
    ],
    [
      ...sameRequestOtherwiseWritten(base, 'h'),
      ['stream (replayed)', { ...base, stream: true }],
      ['stream_options', { ...base, stream: true, stream_options: { include_usage: true } }],
      ['service_tier', { ...base, service_tier: 'flex' }],
      ['safety_identifier', { ...base, safety_identifier: 'user-1' }],
      ['prompt_cache_key', { ...base, prompt_cache_key: 'k' }],
      ['a field sent null (as unset)', { ...base, temperature: null }],
      ['X-Svc-Agent', base, { 'x-svc-agent': 'another-agent' }],
    ],
  );
});

test('messages: every field and header that can change the answer keys apart; order, whitespace, metadata and beta order share', async (t) => {
  const tool = { name: 'lookup', input_schema: { type: 'object', properties: { q: { type: 'string' } } } };
  const base = { model: 'claude-sonnet-4-5', max_tokens: 64, system: 'be brief', messages: [{ role: 'user', content: 'hi' }], tools: [tool] };
  await expectIdentity(
    t,
    'messages',
    base,
    [
      ['model', { ...base, model: 'claude-opus-4-1' }],
      ['user content', { ...base, messages: [{ role: 'user', content: 'hi!' }] }],
      ['system', { ...base, system: 'be long' }],
      ['system as blocks', { ...base, system: [{ type: 'text', text: 'be brief' }] }],
      ['tools', { ...base, tools: [{ ...tool, description: 'finds things' }] }],
      ['tool_choice', { ...base, tool_choice: { type: 'any' } }],
      ['disable_parallel_tool_use', { ...base, tool_choice: { type: 'auto', disable_parallel_tool_use: true } }],
      ['max_tokens', { ...base, max_tokens: 65 }],
      ['temperature', { ...base, temperature: 0.5 }],
      ['top_p', { ...base, top_p: 0.5 }],
      ['top_k', { ...base, top_k: 5 }],
      ['stop_sequences', { ...base, stop_sequences: ['END'] }],
      ['thinking', { ...base, max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } }],
      ['output_config', { ...base, output_config: { effort: 'low' } }],
      ['a beta', base, { 'anthropic-beta': 'one-2025' }],
      ['two betas', base, { 'anthropic-beta': 'one-2025,two-2025' }],
      ['another version', base, { 'anthropic-version': '2023-01-01' }],
      ['subject', base, { 'x-svc-subject': 'someone' }],
    ],
    [
      ...sameRequestOtherwiseWritten(base, 'b'),
      ['stream (replayed)', { ...base, stream: true }],
      ['metadata.user_id', { ...base, metadata: { user_id: 'u-1' } }],
      ['the default version', base, { 'anthropic-version': '2023-06-01' }],
      ['the betas in another order and spacing', base, { 'anthropic-beta': 'two-2025 , one-2025' }],
      ['the betas under both spellings', base, { 'messages-beta': 'two-2025', 'anthropic-beta': 'one-2025' }],
    ],
  );
});

test('responses: every field that can change the answer keys apart; order, whitespace and the echoed fields share', async (t) => {
  const tool = { type: 'function', name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } };
  const base = { model: 'gpt-4o-mini', instructions: 'be brief', input: 'hi', tools: [tool] };
  await expectIdentity(
    t,
    'responses',
    base,
    [
      ['model', { ...base, model: 'gpt-4o' }],
      ['instructions', { ...base, instructions: 'be long' }],
      ['input', { ...base, input: 'hi!' }],
      ['input as a message', { ...base, input: [{ role: 'user', content: 'hi' }] }],
      ['tools', { ...base, tools: [{ ...tool, description: 'finds things' }] }],
      ['tool_choice', { ...base, tool_choice: 'required' }],
      ['parallel_tool_calls false', { ...base, parallel_tool_calls: false }],
      ['text.format', { ...base, text: { format: { type: 'json_object' } } }],
      ['text.verbosity', { ...base, text: { verbosity: 'low' } }],
      ['temperature', { ...base, temperature: 0.5 }],
      ['top_p', { ...base, top_p: 0.5 }],
      ['max_output_tokens', { ...base, max_output_tokens: 100 }],
      ['reasoning', { ...base, reasoning: { effort: 'low' } }],
      ['include', { ...base, include: ['reasoning.encrypted_content'] }],
      ['top_logprobs', { ...base, top_logprobs: 2 }],
      ['max_tool_calls', { ...base, max_tool_calls: 2 }],
      ['truncation', { ...base, truncation: 'auto' }],
      ['store false', { ...base, store: false }],
    ],
    [
      ...sameRequestOtherwiseWritten(base, 'b'),
      ['stream (replayed)', { ...base, stream: true }],
      ['store true (the default)', { ...base, store: true }],
      ['metadata', { ...base, metadata: { trace: 'x' } }],
      ['user', { ...base, user: 'u-1' }],
      ['safety_identifier', { ...base, safety_identifier: 'u-1' }],
      ['prompt_cache_key', { ...base, prompt_cache_key: 'k' }],
      ['service_tier', { ...base, service_tier: 'flex' }],
    ],
  );
});

test('a sampled request (temperature above 0, n above 1) is served its stored answer again, as docs/gateway.md says: a new sample takes Cache-Control: no-cache', async (t) => {
  const { send } = await gatewayFor(t, 'chat/completions');
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a poem' }], temperature: 1.2, n: 2 };
  const first = await send(body);
  const again = await send(body);
  assert.equal(again.wentUpstream, false);
  assert.equal(json(again.response).choices[0].message.content, json(first.response).choices[0].message.content);
  const resampled = await send(body, { 'cache-control': 'no-cache' });
  assert.equal(resampled.wentUpstream, true);
  assert.notEqual(json(resampled.response).choices[0].message.content, json(first.response).choices[0].message.content);
});
test("a stored chat answer's audio is served only until its expires_at: after it, the id a next turn would name is gone upstream and the request goes live", async (t) => {
  const nowSeconds = () => Math.floor(Date.now() / 1000);
  let expiresAt = nowSeconds() + 3600;
  const { send, app } = await gatewayFor(t, 'chat/completions', (request, n) => {
    const answer = completion(`transcript ${n}`);
    const message = (answer.choices as Array<{ message: Record<string, unknown> }>)[0]!.message;
    Object.assign(message, { content: null, audio: { id: `audio_${n}`, expires_at: expiresAt, data: 'UklGRg==', transcript: `transcript ${n}` } });
    return answer;
  });
  const audioOf = (response: { body: string }) => json(response).choices[0].message.audio.id;
  const asked = (content: string) => ({ model: 'gpt-4o-audio-preview', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' }, messages: [{ role: 'user', content }] });

  // Valid for an hour: a repeat is served the stored audio.
  await send(asked('say hi'));
  const repeat = await send(asked('say hi'));
  assert.equal(repeat.wentUpstream, false);
  assert.equal(audioOf(repeat.response), 'audio_1');

  // Expired (the upstream keeps an answer's audio for a while only): a repeat goes upstream, and its fresh answer
  // replaces the stored one.
  expiresAt = nowSeconds() - 1;
  await send(asked('say bye'));
  expiresAt = nowSeconds() + 3600;
  const afterExpiry = await send(asked('say bye'));
  assert.equal(afterExpiry.wentUpstream, true);
  assert.equal(afterExpiry.response.headers['x-svc-route'], 'live');
  assert.equal(audioOf(afterExpiry.response), 'audio_3');
  const run = json(await app.inject({ url: `/api/v1/runs/${afterExpiry.response.headers['x-svc-run-id']}` })).run;
  assert.match(JSON.stringify(run.routeExplanation.rejectedAlternatives), /upstream object \(audio, container\) that has expired/);
  const next = await send(asked('say bye'));
  assert.equal(next.wentUpstream, false);
  assert.equal(audioOf(next.response), 'audio_3');
});

test("a stored message's container is served only until its expires_at: after it, a next turn naming the container would fail upstream and the request goes live", async (t) => {
  let expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const { send } = await gatewayFor(t, 'messages', (request, n) => ({ ...answerOf('messages', request, n), container: { id: `container_${n}`, expires_at: expiresAt } }));
  // A request with code execution is never stored (the test below); an answer naming a container all the same (a
  // server tool of a version svc does not know yet) is served until the container expires.
  const asked = (content: string) => ({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content }] });
  const containerOf = (response: { body: string }) => json(response).container.id;

  await send(asked('run it'));
  const repeat = await send(asked('run it'));
  assert.equal(repeat.wentUpstream, false);
  assert.equal(containerOf(repeat.response), 'container_1');

  expiresAt = new Date(Date.now() - 1000).toISOString();
  await send(asked('run that'));
  expiresAt = new Date(Date.now() + 3_600_000).toISOString();
  const afterExpiry = await send(asked('run that'));
  assert.equal(afterExpiry.wentUpstream, true);
  assert.equal(containerOf(afterExpiry.response), 'container_3');
  const next = await send(asked('run that'));
  assert.equal(next.wentUpstream, false);
  assert.equal(containerOf(next.response), 'container_3');
});

/**
 * Each request whose provider runs something at request time (or whose answer depends on state the upstream holds),
 * sent twice, goes upstream both times and is recorded as not applicable to the cache, with the reason `reasonOf`
 * gives; each request without such a thing, sent twice, is served the stored answer the second time.
 */
async function expectProviderRunsUncached(
  t: TestContext,
  wire: Wire,
  base: Record<string, unknown>,
  uncached: Array<[providerRun: string, extra: Record<string, unknown>]>,
  cached: Array<[name: string, extra: Record<string, unknown>]>,
  reasonOf = (providerRun: string) => `runs ${providerRun} at request time`,
) {
  const { send, app } = await gatewayFor(t, wire);
  for (const [providerRun, extra] of uncached) {
    await send({ ...base, ...extra });
    const again = await send({ ...base, ...extra });
    assert.equal(again.wentUpstream, true, `${providerRun}: a repeat must go upstream (served ${again.response.headers['x-svc-route']})`);
    const run = json(await app.inject({ url: `/api/v1/runs/${again.response.headers['x-svc-run-id']}` })).run;
    assert.deepEqual([run.routeExplanation.cache[0].lookup, run.routeExplanation.cache[0].write], ['not_applicable', 'not_cacheable'], providerRun);
    assert.ok(
      run.routeExplanation.rejectedAlternatives.some((rejected: { route: string; reason: string }) => rejected.route === 'exact_cache' && rejected.reason.includes(reasonOf(providerRun))),
      providerRun,
    );
  }
  for (const [name, extra] of cached) {
    assert.equal((await send({ ...base, ...extra })).wentUpstream, true, name);
    const again = await send({ ...base, ...extra });
    assert.equal(again.wentUpstream, false, `${name} must be served from the cache`);
  }
}

test('chat completions: a web search (web_search_options) is neither served from nor stored into the exact cache; the request without it is', async (t) => {
  const base = { model: 'gpt-4o-mini-search-preview', messages: [{ role: 'user', content: 'news today?' }] };
  await expectProviderRunsUncached(
    t,
    'chat/completions',
    base,
    [
      ['web_search_options', { web_search_options: {} }],
      ['web_search_options', { messages: [{ role: 'user', content: 'and in Oslo?' }], web_search_options: { search_context_size: 'low' } }],
    ],
    [
      ['no web_search_options', {}],
      ['web_search_options null (as unset)', { messages: [{ role: 'user', content: 'and in Oslo?' }], web_search_options: null }],
    ],
  );
});

test('messages: server tools that reach outside the request (web search, web fetch, code execution), mcp_servers and a container are neither served from nor stored into the exact cache; client tools and tool search are', async (t) => {
  const base = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'news today?' }] };
  const weather = { name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } };
  const mcpServers = [{ type: 'url', url: 'https://mcp.example/sse', name: 'docs' }];
  await expectProviderRunsUncached(
    t,
    'messages',
    base,
    [
      ['web_search_20250305', { tools: [weather, { type: 'web_search_20250305', name: 'web_search', max_uses: 1 }] }],
      ['web_search_20260209', { tools: [{ type: 'web_search_20260209', name: 'web_search' }] }],
      ['web_fetch_20250910', { tools: [{ type: 'web_fetch_20250910', name: 'web_fetch' }] }],
      ['code_execution_20250825', { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }],
      ['code_execution_20250522', { tools: [{ type: 'code_execution_20250522', name: 'code_execution' }] }],
      ['mcp_servers', { mcp_servers: mcpServers, tools: [{ type: 'mcp_toolset', mcp_server_name: 'docs' }] }],
      ['mcp_servers', { messages: [{ role: 'user', content: 'what docs?' }], mcp_servers: mcpServers }],
      ['container', { container: 'container_011CZ' }],
    ],
    [
      ['a function tool', { tools: [weather] }],
      ['bash', { tools: [{ type: 'bash_20250124', name: 'bash' }] }],
      ['text_editor', { tools: [{ type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }] }],
      ['computer', { tools: [{ type: 'computer_20250124', name: 'computer', display_width_px: 1024, display_height_px: 768 }] }],
      ['memory', { tools: [{ type: 'memory_20250818', name: 'memory' }] }],
      ['tool search', { tools: [{ type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' }, { ...weather, defer_loading: true }] }],
      ['mcp_servers and container null (as unset)', { messages: [{ role: 'user', content: 'what docs?' }], mcp_servers: null, container: null }],
    ],
  );
});

test("messages: a message thread (thread: create or continue) and prompt-cache diagnostics, whose answers depend on what the upstream holds, are neither served from nor stored into the exact cache; thread and diagnostics null are", async (t) => {
  // A hit's message has an id svc made up, which the upstream never held: the thread's next turn (a continue from it)
  // or a diagnostics comparison with it would find nothing there. A continue is the upstream's thread state itself.
  const base = { model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'weather in Oslo?' }] };
  await expectProviderRunsUncached(
    t,
    'messages',
    base,
    [
      ['thread', { thread: { type: 'create' } }],
      ['thread', { messages: [{ role: 'user', content: 'and in Bergen?' }], thread: { type: 'continue', previous_message_id: 'msg_up' } }],
      ['diagnostics', { diagnostics: { previous_message_id: null } }],
      ['diagnostics', { messages: [{ role: 'user', content: 'and in Bergen?' }], diagnostics: { previous_message_id: 'msg_up' } }],
    ],
    [['thread and diagnostics null (as unset)', { thread: null, diagnostics: null }]],
    (field) => `the request's ${field} names state the upstream holds`,
  );
});
