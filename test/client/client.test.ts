/** The reference client (SPEC 4.20, 6.3, 8) against a real listening svc, and its rules in isolation. */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type TestContext } from 'node:test';
import { createGzip } from 'node:zlib';
import { createSvcClient, SvcApiError, SvcClient, SvcStreamError } from '../../src/client/index.ts';
import { tracedTool, type ToolTracer } from '../../src/client/tools.ts';
import { socketTransport, type Transport } from '../../src/client/transport.ts';
import { build } from '../support/build.ts';
import { contentChunk, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { foreignServer } from '../support/foreign-server.ts';

/**
 * Read `stream` to its end, which must be a SvcStreamError (each chunk before it given to `onChunk`): that error, for
 * the caller's checks of the correlation it carries.
 */
async function streamFailure<Chunk>(stream: AsyncIterable<Chunk>, onChunk: (chunk: Chunk) => void = () => undefined, label?: string): Promise<SvcStreamError> {
  try {
    for await (const chunk of stream) onChunk(chunk);
  } catch (error) {
    assert.ok(error instanceof SvcStreamError, `${label === undefined ? '' : `${label}: `}${String(error)}`);
    return error;
  }
  return assert.fail(`${label === undefined ? '' : `${label}: `}the stream ended without an error`);
}

async function serve(t: TestContext, env: Record<string, string> = {}) {
  const built = await build(t, { env });
  const requests: string[] = [];
  built.app.addHook('onRequest', async (request) => void requests.push(`${request.method} ${request.url}`));
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, baseUrl: address, requests };
}

const WEATHER = {
  type: 'function',
  function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};

test('buffered chat: content, correlation values, usage, tool calls; stream false forced; identity from SVC_* env', async (t) => {
  const { baseUrl, services } = await serve(t);
  const client = createSvcClient({ env: { SVC_BASE_URL: baseUrl, SVC_APP: 'checkout', SVC_AGENT: 'planner', SVC_SUBJECT: 'user-7' } });
  t.after(() => client.close());
  const result = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }], stream: true });
  assert.ok(result.content.length > 0);
  assert.match(result.runId, /^run_/);
  assert.equal(result.route, 'live');
  assert.match(result.requestId, /^req_/);
  assert.equal(result.runUrl, `${baseUrl}/runs/${result.runId}`);
  assert.ok(result.usage && result.usage.totalTokens > 0);
  assert.equal(result.model, 'gpt-4o-mini');
  assert.equal(result.finishReason, 'stop');
  assert.deepEqual(result.toolCalls, []);
  assert.equal(result.raw.object, 'chat.completion', 'stream: true was overridden');
  await services.store.flush();
  const run = await services.runs.find({ tenantId: 'default', tenantWide: true } as any, result.runId);
  assert.deepEqual([run.appId, run.agent, run.subject], ['checkout', 'planner', 'user-7']);
  // The gateway names the provider that served the answer (x-svc-provider); a cache hit was served by none.
  assert.ok(result.provider);
  assert.equal(result.provider, run.provider);
  const again = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] });
  assert.equal(again.route, 'exact_cache');
  assert.equal(again.provider, null);

  const tools = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'weather in Paris?' }], tools: [WEATHER] });
  assert.equal(tools.finishReason, 'tool_calls');
  assert.equal(tools.toolCalls[0]!.name, 'get_weather');
  assert.doesNotThrow(() => JSON.parse(tools.toolCalls[0]!.arguments));
});

test('the default app is default-app', async (t) => {
  const { baseUrl, services } = await serve(t);
  const client = createSvcClient({ env: { SVC_BASE_URL: baseUrl } });
  t.after(() => client.close());
  const { runId } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  await services.store.flush();
  assert.equal((await services.runs.find({ tenantId: 'default', tenantWide: true } as any, runId)).appId, 'default-app');
});

test('an SVC_* variable set to nothing is unset, as svc reads its own: the app is default-app', async (t) => {
  const { baseUrl, services } = await serve(t);
  const client = createSvcClient({ baseUrl, env: { SVC_APP: '', SVC_AGENT: ' ', SVC_SUBJECT: '', SVC_API_KEY: '' } });
  t.after(() => client.close());
  const { runId } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  await services.store.flush();
  const run = await services.runs.find({ tenantId: 'default', tenantWide: true } as any, runId);
  assert.deepEqual([run.appId, run.agent, run.subject], ['default-app', null, null]);
});

test('streamed chat: delta chunks, then one done chunk with cumulative content, toolCalls and finishReason', async (t) => {
  const { baseUrl } = await serve(t);
  const client = clientOf(t, baseUrl);
  const chunks = [];
  for await (const chunk of client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'weather in Oslo?' }], tools: [WEATHER] })) chunks.push(chunk);
  const done = chunks.at(-1)!;
  assert.equal(done.type, 'done');
  assert.ok(chunks.slice(0, -1).every((chunk) => chunk.type === 'delta'));
  assert.ok(chunks.length >= 2, 'deltas arrived before the end');
  if (done.type !== 'done') return;
  assert.equal(done.finishReason, 'tool_calls');
  assert.equal(done.toolCalls.length, 1);
  assert.equal(done.toolCalls[0]!.name, 'get_weather');
  assert.deepEqual(JSON.parse(done.toolCalls[0]!.arguments), JSON.parse(done.toolCalls[0]!.arguments));
  assert.match(done.runId, /^run_/);
  assert.equal(done.route, 'live');
  assert.ok(done.usage && done.usage.totalTokens > 0);
  const text = await client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'tell me something' }] });
  let content = '';
  let final: any = null;
  for await (const chunk of text) {
    if (chunk.type === 'delta') content += chunk.content;
    else final = chunk;
  }
  assert.equal(final.content, content);
  assert.equal(final.finishReason, 'stop');
});

test('with n > 1 a streamed chat carries every choice: deltas marked with their choice, and the done chunk\'s choices as the buffered result\'s', async (t) => {
  const { baseUrl } = await serve(t);
  const client = clientOf(t, baseUrl);
  for (const request of [
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'two answers, please' }], n: 2 },
    { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'weather in Oslo?' }], tools: [WEATHER], n: 3 },
  ]) {
    const texts = new Map<number, string>();
    let done: any = null;
    for await (const chunk of client.chatStream(request)) {
      if (chunk.type === 'delta') texts.set(chunk.choice, (texts.get(chunk.choice) ?? '') + chunk.content);
      else done = chunk;
    }
    const buffered = await client.chat(request);
    assert.equal(buffered.choices.length, request.n);
    assert.deepEqual(done.choices, buffered.choices, 'the streamed choices are the buffered ones');
    for (const choice of done.choices) assert.equal(choice.content, texts.get(choice.index) ?? '');
    // Choice 0 is the answer's own fields, as the buffered result's are.
    assert.deepEqual([done.content, done.toolCalls, done.finishReason], [done.choices[0].content, done.choices[0].toolCalls, done.choices[0].finishReason]);
    assert.deepEqual([buffered.content, buffered.toolCalls, buffered.finishReason], [done.content, done.toolCalls, done.finishReason]);
  }
});

test('a streamed chat keeps the caller\'s other stream_options (include_obfuscation) beside the usage it asks for', async (t) => {
  const upstream = await startFakeUpstream(t, (_request, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify({ ...contentChunk('hi'), choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  const { baseUrl } = await serve(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const client = clientOf(t, baseUrl);
  for await (const _ of client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }], stream_options: { include_obfuscation: false } })) void _;
  assert.deepEqual(upstream.requests[0]!.body.stream_options, { include_obfuscation: false, include_usage: true });
});

test('a provider error inside an accepted stream raises SvcStreamError with requestId, runId, runUrl and route', async (t) => {
  const upstream = await startFakeUpstream(t, (_request, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('partial '))}\n\n`);
    res.end(); // truncated: no finish_reason, no [DONE]
  });
  const { baseUrl } = await serve(t, { CHATCOMP_API_KEY: 'sk-up', CHATCOMP_BASE_URL: upstream.baseUrl });
  const client = clientOf(t, baseUrl);
  const seen: string[] = [];
  const error = await streamFailure(client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }), (chunk) => seen.push(chunk.type));
  assert.match(error.runId, /^run_/);
  assert.equal(error.route, 'live');
  assert.match(error.requestId, /^req_/);
  assert.equal(error.runUrl, `${baseUrl}/runs/${error.runId}`);
  assert.deepEqual(seen, ['delta'], 'the partial delta arrived before the error');
});

/** A client of `baseUrl` reading no environment, closed after the test. */
function clientOf(t: TestContext, baseUrl: string) {
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  return client;
}

/** A proxy in front of svc: relays each answer's headers, then `forward(text, res)` writes what it will of svc's body. */
async function relay(t: TestContext, baseUrl: string, forward: (text: string, res: import('node:http').ServerResponse) => void): Promise<string> {
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', async () => {
      const upstream = await fetch(`${baseUrl}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
      res.writeHead(upstream.status, Object.fromEntries(upstream.headers.entries()));
      forward(await upstream.text(), res);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    proxy.closeAllConnections();
    proxy.close();
  });
  return `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

test('a connection cut inside an accepted stream raises SvcStreamError with the correlation, not the bare transport error', async (t) => {
  const { baseUrl } = await serve(t);
  // The proxy relays the first event, then loses the connection.
  const cutting = await relay(t, baseUrl, (text, res) => {
    res.write(text.slice(0, text.indexOf('\n\n') + 2));
    setTimeout(() => res.destroy(), 20);
  });
  const client = createSvcClient({ baseUrl: cutting, env: {} });
  t.after(() => client.close());
  for (const open of [
    () => client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'tell me a long story' }] }),
    () => client.messagesStream({ model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'tell me a long story' }] }),
  ]) {
    const error = await streamFailure<unknown>(open());
    assert.match(error.runId, /^run_/);
    assert.equal(error.route, 'live');
    assert.match(error.requestId, /^req_/);
    assert.equal(error.runUrl, `${baseUrl}/runs/${error.runId}`);
  }
  // A stream the caller aborts keeps the abort's own error.
  const direct = createSvcClient({ baseUrl, env: {} });
  t.after(() => direct.close());
  const controller = new AbortController();
  await assert.rejects(
    (async () => {
      for await (const _ of direct.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { signal: controller.signal })) controller.abort(new Error('the caller gave up'));
    })(),
    /the caller gave up/,
  );
});

test('a chat stream that ends cleanly without data: [DONE] did not finish, even after its finish_reason', async (t) => {
  const { baseUrl } = await serve(t);
  // svc sends [DONE] only after a complete answer; here a proxy ends the stream cleanly before it (and before the usage).
  const shortened = await relay(t, baseUrl, (text, res) => res.end(text.slice(0, text.lastIndexOf('data: {"id"'))));
  const client = createSvcClient({ baseUrl: shortened, env: {} });
  t.after(() => client.close());
  const seen: string[] = [];
  const error = await streamFailure(client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] }), (chunk) => seen.push(chunk.type));
  assert.match(error.runId, /^run_/);
  assert.equal(error.route, 'live');
  assert.ok(seen.length > 0 && seen.every((type) => type === 'delta'), 'the deltas arrived; no done chunk');
});

test("a stream's signal: one aborted already sends nothing; one shared by many streams keeps no listener of theirs", async (t) => {
  const { baseUrl, requests } = await serve(t);
  const client = clientOf(t, baseUrl);
  const aborted = new AbortController();
  aborted.abort(new Error('shutting down'));
  await assert.rejects(
    (async () => {
      for await (const _ of client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }, { signal: aborted.signal })) void _;
    })(),
    /shutting down/,
  );
  assert.deepEqual(requests, [], 'nothing was sent');

  const shutdown = new AbortController();
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(warning.name);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  for (let i = 0; i < 12; i++) {
    for await (const _ of client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: `stream ${i}` }] }, { signal: shutdown.signal })) void _;
  }
  for await (const chunk of client.messagesStream({ model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] }, { signal: shutdown.signal })) {
    if (chunk.type === 'delta') break; // left early
  }
  await assert.rejects(client.chatStream({ model: 'gpt-4o-mini', messages: [] }, { signal: shutdown.signal }).next(), SvcApiError);
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(warnings, []);
});

test('messages: buffered with stopReason and tool uses; streamed deltas ending with stopReason', async (t) => {
  const { baseUrl } = await serve(t);
  const client = clientOf(t, baseUrl);
  const request = { model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'hello' }] };
  const buffered = await client.messages(request);
  assert.ok(buffered.content.length > 0);
  assert.equal(buffered.stopReason, 'end_turn');
  assert.match(buffered.runId, /^run_/);
  const tools = [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }];
  const chunks = [];
  for await (const chunk of client.messagesStream({ ...request, messages: [{ role: 'user', content: 'weather in Rome?' }], tools })) chunks.push(chunk);
  const done = chunks.at(-1)!;
  assert.equal(done.type, 'done');
  if (done.type !== 'done') return;
  assert.equal(done.stopReason, 'tool_use');
  assert.equal(done.toolUses[0]!.name, 'get_weather');
  assert.equal(typeof done.toolUses[0]!.input, 'object');
  assert.ok(chunks.some((chunk) => chunk.type === 'delta' && chunk.toolUse?.partialJson !== undefined), 'input_json_delta relayed');
});

test('errors carry method, path, status and the first 500 characters of the body; the client never retries', async (t) => {
  const { baseUrl, requests } = await serve(t);
  const client = clientOf(t, baseUrl);
  await assert.rejects(client.chat({ model: 'gpt-4o-mini', messages: [], junk: 'x'.repeat(2000) }), (error: unknown) => {
    assert.ok(error instanceof SvcApiError);
    assert.equal(error.method, 'POST');
    assert.equal(error.path, '/v1/chat/completions');
    assert.equal(error.status, 400);
    assert.ok(error.body.length <= 500 && error.body.length > 0);
    return true;
  });
  const before = requests.length;
  await assert.rejects(client.chat({ model: 'mock-5xx', messages: [{ role: 'user', content: 'x' }] }), (error: unknown) => {
    assert.ok(error instanceof SvcApiError);
    assert.equal(error.status, 502);
    assert.match(error.runId, /^run_/);
    return true;
  });
  assert.equal(requests.length - before, 1, 'exactly one request: no retries');
  await assert.rejects(client.runs.get('run_missing'), (error: unknown) => error instanceof SvcApiError && error.status === 404 && error.path === '/api/v1/runs/run_missing');
});

test('an API key no header can carry is refused without quoting it; a key read with its line break is trimmed', async (t) => {
  const { baseUrl, requests } = await serve(t, { SVC_API_KEY: 'sk-bootstrap-secret' });
  const fromFile = createSvcClient({ baseUrl, apiKey: 'sk-bootstrap-secret\n', env: {} });
  t.after(() => fromFile.close());
  assert.ok(Array.isArray((await fromFile.keys.list()).keys));
  requests.length = 0;
  // Two keys pasted on two lines, a NUL, a non-ASCII character: undici's error quoted the header value, the key in it.
  for (const key of ['sk-bootstrap-secret\nsk-bootstrap-other', 'sk-bootstrap-secret\u0000', 'sk-bootstrap-secret\u00e9', 'sk-bootstrap secret']) {
    let error: any = null;
    try {
      const client = createSvcClient({ baseUrl, env: { SVC_API_KEY: key } });
      t.after(() => client.close());
      await client.keys.list();
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof TypeError, `${JSON.stringify(key)}: ${error}`);
    assert.doesNotMatch(`${error.message} ${(error.cause as Error | undefined)?.message ?? ''}`, /bootstrap/);
  }
  assert.deepEqual(requests, [], 'nothing was sent');
});

test('an id "." or ".." is refused before anything is sent: as a path segment it would address another endpoint', async (t) => {
  const { baseUrl, requests } = await serve(t);
  const client = clientOf(t, baseUrl);
  // orgs.removeMember('..') was DELETE /api/v1/orgs/active: the deletion of the organization.
  for (const call of [() => client.orgs.removeMember('..'), () => client.orgs.setMemberRole('..', 'owner'), () => client.users.delete('.'), () => client.keys.revoke('..'), () => client.runs.get('..')]) {
    await assert.rejects(call(), (error: unknown) => error instanceof TypeError && /is not an id/.test(error.message));
  }
  assert.deepEqual(requests, []);
  // Dots within an id are the id's own.
  await assert.rejects(client.keys.revoke('..key'), (error: unknown) => error instanceof SvcApiError && error.status === 404);
  assert.deepEqual(requests, ['POST /api/v1/keys/..key/revoke']);
});

test('deadlines: bufferedTimeoutMs bounds a buffered call (1 to 900000); requestTimeoutMs bounds stream headers', async (t) => {
  const { baseUrl } = await serve(t);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 0 }), RangeError);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 900_001 }), RangeError);
  assert.doesNotThrow(() => createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 900_000 }).close());
  const quick = createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 100 });
  t.after(() => quick.close());
  // Said as any call's failure is: method, path and the deadline (it was a bare TimeoutError).
  await assert.rejects(quick.chat({ model: 'mock-slow-3000', messages: [{ role: 'user', content: 'x' }] }), {
    message: 'no answer to POST /v1/chat/completions within 100 ms',
  });
  await assert.rejects(quick.messages({ model: 'mock-slow-3000', max_tokens: 8, messages: [{ role: 'user', content: 'x' }] }), {
    message: 'no answer to POST /v1/messages within 100 ms',
  });

  const silent = createServer(() => undefined); // accepts, never answers
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    silent.closeAllConnections();
    silent.close();
  });
  const port = (silent.address() as AddressInfo).port;
  const streaming = createSvcClient({ baseUrl: `http://127.0.0.1:${port}`, env: {}, requestTimeoutMs: 100 });
  t.after(() => streaming.close());
  await assert.rejects(
    (async () => {
      for await (const _ of streaming.chatStream({ model: 'gpt-4o-mini', messages: [] })) void _;
    })(),
    /no response headers within 100 ms|abort/i,
  );
});

test('requestTimeoutMs is 1 to 2147483647, the longest delay a timer holds: past it the header deadline fired at once and every stream failed', async (t) => {
  const { baseUrl } = await serve(t);
  for (const requestTimeoutMs of [0, 2 ** 31, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => createSvcClient({ baseUrl, env: {}, requestTimeoutMs }), RangeError, String(requestTimeoutMs));
  }
  const longest = createSvcClient({ baseUrl, env: {}, requestTimeoutMs: 2 ** 31 - 1 });
  t.after(() => longest.close());
  const chunks = [];
  for await (const chunk of longest.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })) chunks.push(chunk);
  assert.equal(chunks.at(-1)?.type, 'done');
});

test('traced tools follow the SPEC order; failures of tracing are swallowed, tool errors propagate', async () => {
  const calls: string[] = [];
  const tracer = (fail = false): ToolTracer => ({
    trace: async (_runId, type) => {
      calls.push(type);
      if (fail) throw new Error('trace down');
    },
    cacheCheck: async () => {
      calls.push('cache.check');
      if (fail) throw new Error('cache down');
      return { hit: false };
    },
    cacheStore: async () => void calls.push('cache.store'),
  });
  const read = tracedTool(tracer(), { name: 'lookup', sideEffectLevel: 0, ttlSeconds: 60 }, (args: { q: string }) => {
    calls.push('execute');
    return { q: args.q };
  });
  assert.deepEqual(await read({ q: 'x' }, { runId: 'run_1' }), { q: 'x' });
  assert.deepEqual(calls, ['cache.check', 'tool.called', 'execute', 'tool.completed', 'cache.store']);

  calls.length = 0;
  const write = tracedTool(tracer(), { name: 'send', sideEffectLevel: 3, ttlSeconds: 60, idempotencyKey: (a: { id: string }) => `send-${a.id}` }, () => {
    calls.push('execute');
    return 'sent';
  });
  await write({ id: '1' }, { runId: 'run_1' });
  assert.deepEqual(calls, ['tool.called', 'side_effect.planned', 'execute', 'tool.completed'], 'no cache for level >= 2');

  calls.length = 0;
  const noTtl = tracedTool(tracer(), { name: 'read', sideEffectLevel: 1 }, () => calls.push('execute'));
  await noTtl({}, { runId: 'run_1' });
  assert.deepEqual(calls, ['tool.called', 'execute', 'tool.completed'], 'no cache without ttlSeconds');

  calls.length = 0;
  const failing = tracedTool(tracer(true), { name: 'lookup', sideEffectLevel: 0, ttlSeconds: 5 }, () => 'still works');
  assert.equal(await failing({}, { runId: 'run_1' }), 'still works');

  calls.length = 0;
  const throwing = tracedTool(tracer(), { name: 'boom', sideEffectLevel: 2 }, () => {
    throw new Error('tool failed');
  });
  await assert.rejects(throwing({}, { runId: 'run_1' }), /tool failed/);
  assert.deepEqual(calls, ['tool.called', 'side_effect.planned']);

  calls.length = 0;
  assert.deepEqual(await read({ q: 'y' }), { q: 'y' });
  assert.ok(calls.every((call) => call === 'execute'), 'without a run id the tool runs untraced');

  const named: any = [1, 2];
  named.extra = 'dropped by JSON';
  for (const bad of [{ when: new Date() }, { f: () => 1 }, { n: Number.NaN }, { u: undefined }, { list: [1, , 3] }, { list: named }, { big: 1n }, { m: new Map() }]) {
    calls.length = 0;
    await assert.rejects(read(bad as any, { runId: 'run_1' }), TypeError);
    assert.deepEqual(calls, [], 'nothing happens before arguments are plain JSON');
  }
  const cyclic: any = {};
  cyclic.self = cyclic;
  await assert.rejects(read(cyclic, { runId: 'run_1' }), TypeError);
  for (const key of [' padded', '', 'k'.repeat(121), 42]) {
    const keyed = tracedTool(tracer(), { name: 'send', sideEffectLevel: 3, idempotencyKey: () => key as any }, () => 'x');
    await assert.rejects(keyed({}, { runId: 'run_1' }), TypeError, JSON.stringify(key));
  }
});

test('a traced tool\'s idempotencyKey of at most 120 characters is taken however many UTF-16 units it holds (an emoji is one character, two units), as svc takes it (SPEC 8); 121 characters are refused', async (t) => {
  const { baseUrl } = await serve(t);
  const client = clientOf(t, baseUrl);
  const { runId } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'send the postcards' }] });
  const key = '📮'.repeat(120);
  const send = client.tool({ name: 'send_postcard', sideEffectLevel: 3, idempotencyKey: () => key }, async () => 'sent');
  assert.equal(await send({}, { runId }), 'sent');
  const detail = await client.runs.get(runId);
  assert.equal(detail.sideEffects[0]?.idempotencyKey, key);
  const tooLong = client.tool({ name: 'send_postcard', sideEffectLevel: 3, idempotencyKey: () => `${key}📮` }, async () => 'sent');
  await assert.rejects(tooLong({}, { runId }), TypeError);
});

test('traced tools against svc: events on the run and a side-effect record that becomes executed', async (t) => {
  const { baseUrl } = await serve(t);
  const client = clientOf(t, baseUrl);
  const { runId } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'send the report' }] });
  const send = client.tool({ name: 'send_report', sideEffectLevel: 3, idempotencyKey: (a: { to: string }) => `report-${a.to}` }, async () => ({ ok: true }));
  assert.deepEqual(await send({ to: 'ops' }, { runId }), { ok: true });
  const detail = await client.runs.get(runId);
  assert.deepEqual(detail.events.slice(-3).map((e) => e.type), ['tool.called', 'side_effect.planned', 'tool.completed']);
  assert.equal(detail.sideEffects[0]!.state, 'executed');
  assert.equal(detail.sideEffects[0]!.idempotencyKey, 'report-ops');
  const lookup = client.tool({ name: 'lookup', sideEffectLevel: 0, ttlSeconds: 30 }, async () => 'found');
  assert.equal(await lookup({ q: 1 }, { runId }), 'found', 'a missing tool-cache endpoint is a swallowed miss');

  const events = [];
  for await (const event of client.runEvents(runId, { pageSize: 2 })) events.push(event.seq);
  assert.deepEqual(events, [...events].sort((a, b) => b - a), 'newest first');
  assert.equal(events.length, (await client.runs.integrity(runId)).eventCount);

  assert.equal((await client.feedback.thumbsUp(runId)).feedback.rating, 5);
  const down = await client.feedback.thumbsDown(runId, 'The report goes to finance.');
  assert.equal(down.feedback.rating, -1);
  assert.equal(down.feedback.correction, 'The report goes to finance.');
});

test('run-event traversal stops before request 101', async () => {
  let requests = 0;
  const endless: Transport = {
    async request() {
      requests += 1;
      const body = { runId: 'run_x', events: [{ seq: 1000 - requests, type: 't', payload: {}, createdAt: '', prevHash: '', hash: '' }], window: { limit: 1, count: 1, hasMore: true, nextBefore: 1000 - requests, truncatedByBytes: false } };
      return { status: 200, headers: {}, body, text: JSON.stringify(body) };
    },
    stream: async () => {
      throw new Error('unused');
    },
    close: async () => undefined,
  };
  const client = new SvcClient(endless);
  let count = 0;
  for await (const _ of client.runEvents('run_x', { pageSize: 1 })) count += 1;
  assert.equal(requests, 100);
  assert.equal(count, 100);
});

test('a server that is not svc: a javascript: run URL is dropped; tool_use input that is not JSON is a stream error', async (t) => {
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-svc-run-id': 'run_abc', 'x-svc-route': 'live', 'x-request-id': 'req_1', 'x-svc-run-url': 'javascript:alert(1)' });
    res.write(event('message_start', { message: { model: 'm', usage: { input_tokens: 1, output_tokens: 0 } } }));
    res.write(event('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: {} } }));
    res.write(event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: '{"city":' } }));
    res.write(event('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } }));
    res.end(event('message_stop', {}));
  });
  const client = clientOf(t, baseUrl);
  const error = await streamFailure<unknown>(client.messagesStream({ model: 'm', max_tokens: 5, messages: [] }));
  assert.deepEqual([error.runId, error.route, error.requestId, error.runUrl], ['run_abc', 'live', 'req_1', '']);
});

test('a server that is not svc: a chat chunk the client cannot read (null, a null choice, tool_calls not a list, a null fragment) is a stream error with the correlation, not a TypeError', async (t) => {
  const chunks = ['null', '{"choices":[{"index":0,"delta":{"tool_calls":{}}}]}', '{"choices":[{"index":0,"delta":{"tool_calls":[null]}}]}', '{"choices":[null]}'];
  let next = 0;
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-svc-run-id': 'run_abc', 'x-svc-route': 'live', 'x-request-id': 'req_1' });
    res.end(`data: ${chunks[next++]}\n\ndata: [DONE]\n\n`);
  });
  const client = clientOf(t, baseUrl);
  for (const chunk of chunks) {
    const error = await streamFailure<unknown>(client.chatStream({ model: 'm', messages: [] }), undefined, chunk);
    assert.deepEqual([error.runId, error.route, error.requestId], ['run_abc', 'live', 'req_1'], chunk);
  }
});

test('a stream a proxy gzips unasked is decoded as it arrives', async (t) => {
  // Its compressed bytes were parsed as server-sent events: no event, so a stream that ended without [DONE].
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip', 'x-svc-run-id': 'run_abc', 'x-svc-route': 'live' });
    const gzip = createGzip();
    gzip.pipe(res);
    for (const content of ['Hel', 'lo']) {
      gzip.write(`data: ${JSON.stringify({ model: 'm', choices: [{ index: 0, delta: { content } }] })}\n\n`);
      gzip.flush();
    }
    gzip.end(`data: ${JSON.stringify({ model: 'm', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
  });
  const chunks: string[] = [];
  for await (const chunk of clientOf(t, baseUrl).chatStream({ model: 'm', messages: [] })) chunks.push(chunk.type === 'delta' ? chunk.content : `done:${chunk.content}`);
  assert.deepEqual(chunks, ['Hel', 'lo', 'done:Hello']);
});

test('a management call is bounded: no answer, or one sent a byte at a time, fails at the buffered deadline', async (t) => {
  const silent = await foreignServer(t, () => undefined);
  const dripping = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const timer = setInterval(() => res.write(' '), 50);
    res.on('close', () => clearInterval(timer));
  });
  for (const baseUrl of [silent, dripping]) {
    const client = createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 300 });
    t.after(() => client.close());
    await assert.rejects(client.keys.list(), /no answer to GET \/api\/v1\/keys within 300 ms/);
  }
});

test('a 2xx answer that is not JSON (an HTML page, an empty body) is an error, not data', async (t) => {
  for (const body of ['<html>hello</html>', '', '"just a string"', '42']) {
    const baseUrl = await foreignServer(t, (res) => res.writeHead(200, { 'content-type': 'text/html' }).end(body));
    const client = createSvcClient({ baseUrl, env: {} });
    t.after(() => client.close());
    // A management call, and a buffered gateway call (chat read `choices` of null, or answered '' from an HTML page).
    for (const [call, path] of [[() => client.keys.list(), '/api/v1/keys'], [() => client.chat({ model: 'gpt-4o-mini', messages: [] }), '/v1/chat/completions'], [() => client.messages({ model: 'm', max_tokens: 1, messages: [] }), '/v1/messages']] as const) {
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof SvcApiError, `${JSON.stringify(body)}: ${error}`);
        assert.equal(error.code, 'invalid_response');
        assert.equal(error.status, 200);
        assert.equal(error.path, path);
        return true;
      });
    }
  }
});

test('an answer larger than the client reads is refused without holding it all', async (t) => {
  const chunk = Buffer.alloc(1024 * 1024, 0x20);
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let sent = 0;
    const more = () => {
      while (sent < 200 && res.write(chunk)) sent++;
      if (sent < 200) res.once('drain', more);
      else res.end();
    };
    more();
  });
  const client = clientOf(t, baseUrl);
  await assert.rejects(client.keys.list(), /larger than 134217728 bytes/);
});

test('closing the client gives up its requests in flight at once (a TUI quitting while its list loads)', async (t) => {
  const baseUrl = await foreignServer(t, () => undefined);
  const client = createSvcClient({ baseUrl, env: {} });
  const pending = client.keys.list();
  const settled = pending.then(() => 'answered', () => 'given up');
  await new Promise((resolve) => setTimeout(resolve, 50));
  await client.close();
  assert.equal(await settled, 'given up');
});

test('with no svc on the local socket, the error names the socket once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'svc.sock');
  const transport = socketTransport(socketPath);
  t.after(() => transport.close());
  await assert.rejects(transport.request('GET', '/health'), (error: Error) => {
    assert.equal(error.message, `cannot reach svc at ${socketPath}: connect ENOENT`);
    return true;
  });
});

test('a redirect is not followed: the prompt and the identity never reach another server; the 3xx is the error', async (t) => {
  const elsewhere: string[] = [];
  const other = await foreignServer(t, (res) => {
    elsewhere.push('request');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ index: 0, message: { content: 'not svc' } }], keys: [] }));
  });
  const baseUrl = await foreignServer(t, (res) => res.writeHead(307, { location: `${other}/elsewhere` }).end());
  const client = createSvcClient({ baseUrl, apiKey: 'svc_secret', subject: 'user-7', env: {} });
  t.after(() => client.close());
  for (const [call, method, path] of [
    [() => client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'private' }] }), 'POST', '/v1/chat/completions'],
    [() => client.keys.list(), 'GET', '/api/v1/keys'],
  ] as const) {
    await assert.rejects(call(), (error: unknown) => {
      assert.ok(error instanceof SvcApiError, String(error));
      assert.deepEqual([error.status, error.method, error.path], [307, method, path]);
      return true;
    });
  }
  const stream = client.chatStream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'private' }] });
  await assert.rejects(stream.next(), (error: unknown) => error instanceof SvcApiError && error.status === 307);
  assert.deepEqual(elsewhere, [], 'nothing was sent to the server the redirect named');
});

test('a buffered answer whose connection breaks off midway is an error naming the call and its status, not a bare TypeError', async (t) => {
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"keys": [', () => res.socket?.destroy());
  });
  const client = clientOf(t, baseUrl);
  for (const [call, name] of [[() => client.keys.list(), 'GET /api/v1/keys'], [() => client.chat({ model: 'gpt-4o-mini', messages: [] }), 'POST /v1/chat/completions']] as const) {
    await assert.rejects(call(), (error: Error) => {
      assert.ok(!(error instanceof TypeError), String(error));
      assert.ok(error.message.includes(`the answer to ${name} (HTTP 200) broke off`), error.message);
      return true;
    });
  }
});

test('a request body that cannot be JSON (a BigInt, a cycle) is a TypeError naming the call, not "cannot reach svc"; nothing is sent', async (t) => {
  const requests: string[] = [];
  const baseUrl = await foreignServer(t, (res) => {
    requests.push('request');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const client = clientOf(t, baseUrl);
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  for (const call of [() => client.chat({ model: 'gpt-4o-mini', messages: [], n: 1n }), () => client.chatStream({ model: 'gpt-4o-mini', messages: [], metadata: cyclic }).next()]) {
    await assert.rejects(call(), (error: Error) => {
      assert.ok(error instanceof TypeError && !/cannot reach svc/.test(error.message), String(error));
      assert.match(error.message, /POST \/v1\/chat\/completions/);
      return true;
    });
  }
  assert.deepEqual(requests, []);
});

test("an error's requestId is x-request-id when well formed, as a result's is; a malformed one (from a proxy) is null", async (t) => {
  let requestId = '';
  const baseUrl = await foreignServer(t, (res) => res.writeHead(502, { 'x-request-id': requestId, 'content-type': 'text/html' }).end('<html>bad gateway</html>'));
  const client = clientOf(t, baseUrl);
  for (const [sent, kept] of [['req_abc', 'req_abc'], ['<script>alert(1)</script>', null], ['x'.repeat(129), null]] as const) {
    requestId = sent;
    for (const call of [() => client.keys.list(), () => client.chat({ model: 'gpt-4o-mini', messages: [] })]) {
      await assert.rejects(call(), (error: unknown) => error instanceof SvcApiError && error.status === 502 && error.requestId === kept);
    }
  }
});

test('an identity value svc would refuse (a line break, non-ASCII, over 200 characters) is a TypeError at creation, not "cannot reach svc" on every call', async (t) => {
  const requests: string[] = [];
  const baseUrl = await foreignServer(t, (res) => {
    requests.push('request');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[]}');
  });
  for (const [option, value] of [['subject', 'user\n7'], ['agent', 'José'], ['app', 'a'.repeat(201)]] as const) {
    assert.throws(() => createSvcClient({ baseUrl, env: {}, [option]: value }), (error: unknown) => {
      assert.ok(error instanceof TypeError, String(error));
      assert.match(error.message, new RegExp(`^${option} must be printable ASCII of at most 200 characters`));
      return true;
    });
  }
  assert.throws(() => createSvcClient({ baseUrl, env: { SVC_SUBJECT: 'user\u00007' } }), TypeError);
  const fine = createSvcClient({ baseUrl, env: {}, app: 'checkout', agent: 'planner v2', subject: ' user-7 ' });
  t.after(() => fine.close());
  await fine.chat({ model: 'gpt-4o-mini', messages: [] });
  assert.deepEqual(requests, ['request']);
});

test("a stream's error answer whose connection breaks off midway is an error naming the call and its status, not a bare TypeError", async (t) => {
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(502, { 'content-type': 'application/json', 'content-length': '1000' });
    res.write('{"error": ', () => res.socket?.destroy());
  });
  const client = clientOf(t, baseUrl);
  for (const stream of [client.chatStream({ model: 'gpt-4o-mini', messages: [] }), client.messagesStream({ model: 'm', max_tokens: 1, messages: [] })]) {
    await assert.rejects(stream.next(), (error: Error) => {
      assert.ok(!(error instanceof TypeError), String(error));
      assert.match(error.message, /the answer to POST \/v1\/(chat\/completions|messages) \(HTTP 502\) broke off/);
      return true;
    });
  }
});

test('a base URL that is not an http(s) address of svc is a TypeError at creation; one with credentials is not quoted', () => {
  for (const baseUrl of ['127.0.0.1:8787', 'localhost:8787', 'ftp://127.0.0.1:8787', 'http://user:hunter2@127.0.0.1:8787', 'http://127.0.0.1:8787/?x=1', 'http://127.0.0.1:8787/#top']) {
    assert.throws(() => createSvcClient({ baseUrl, env: {} }), (error: unknown) => {
      assert.ok(error instanceof TypeError, `${baseUrl}: ${error}`);
      assert.match(error.message, /^the base URL must be an http\(s\) URL/);
      assert.ok(!error.message.includes('hunter2'), error.message);
      return true;
    });
  }
  for (const baseUrl of ['http://127.0.0.1:8787', 'https://svc.example.com/gateway/']) void createSvcClient({ baseUrl, env: {} }).close();
});

test('a stream event larger than the client reads (one that never ends) is a stream error with the correlation, not memory without end', async (t) => {
  const chunk = Buffer.alloc(1024 * 1024, 0x78);
  const baseUrl = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-svc-run-id': 'run_abc' });
    res.write('data: ');
    let sent = 0;
    const more = () => {
      while (sent < 20) {
        sent++;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  const client = clientOf(t, baseUrl);
  for (const stream of [client.chatStream({ model: 'gpt-4o-mini', messages: [] }), client.messagesStream({ model: 'm', max_tokens: 1, messages: [] })]) {
    await assert.rejects(stream.next(), (error: unknown) => {
      assert.ok(error instanceof SvcStreamError, String(error));
      assert.match(error.message, /larger than 16777216 bytes/);
      assert.equal(error.runId, 'run_abc');
      return true;
    });
  }
});
