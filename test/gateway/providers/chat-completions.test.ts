/**
 * The live chat-completions provider against a fake upstream on a real port: pass-through, SSE parsing with events
 * split mid-line, and every failure class (429 with retry-after, 5xx, timeouts, malformed and truncated streams,
 * client abort reaching the upstream, unreachable host).
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Agent } from 'undici';
import { createChatCompletionsProvider, type ProviderTimeouts } from '../../../src/gateway/providers/chat-completions.ts';
import { providerErrorStatus } from '../../../src/gateway/providers/errors.ts';
import type { ChatChunk, Provider } from '../../../src/gateway/providers/types.ts';
import { completion, contentChunk, sendJson, sleep, startFakeUpstream, startSse, streamUntilClientCloses, untilClientCloses, type FakeUpstream } from '../../support/fake-upstream.ts';
import { rejectsWith } from '../../support/provider-errors.ts';

const KEY = 'sk-live-test-0123456789abcdef';

function provider(t: TestContext, upstream: { baseUrl: string }, timeouts: Partial<ProviderTimeouts> = {}): Provider {
  const agent = new Agent();
  t.after(() => agent.close());
  return createChatCompletionsProvider({ name: 'chatcomp', apiKey: KEY, baseUrl: upstream.baseUrl, dispatcher: agent, timeouts });
}

const ctx = () => ({ signal: new AbortController().signal });

async function collect(stream: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const chunks: ChatChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

test('a buffered chat passes every client field through untouched with the bearer key', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('hi there')));
  const request = {
    model: 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello', name: 'ann' }],
    temperature: 0.2,
    seed: 7,
    parallel_tool_calls: false,
    logit_bias: { '50256': -100 },
    metadata: { team: 'a' },
    response_format: { type: 'json_object' },
    reasoning_effort: 'low',
    stop: ['\n'],
    stream: false,
    stream_options: { include_usage: true },
  };
  const answer = await provider(t, upstream).chat(request, ctx());
  assert.equal(answer.choices[0]!.message.content, 'hi there');
  const seen = upstream.requests[0]!;
  assert.equal(seen.method, 'POST');
  assert.equal(seen.url, '/v1/chat/completions');
  assert.equal(seen.headers.authorization, `Bearer ${KEY}`);
  const { stream: _s, stream_options: _o, ...expected } = request;
  assert.deepEqual(seen.body, expected, 'client fields untouched; streaming transport fields are not sent on a buffered call');
});

test('a stream is parsed from SSE split mid-line, with comments and CRLF, and ends at [DONE]', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    const text =
      ': keep-alive comment\r\n\r\n' +
      `data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\r\n\r\n` +
      `data: ${JSON.stringify(contentChunk('Hel'))}\n\n` +
      `data: ${JSON.stringify(contentChunk('lo'))}\n\n` +
      `data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n` +
      `data: ${JSON.stringify({ ...contentChunk(''), choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n` +
      'data: [DONE]\n\n';
    // Write in 7-byte pieces so events and lines are split across reads.
    for (let i = 0; i < text.length; i += 7) {
      res.write(text.slice(i, i + 7));
      if (i % 70 === 0) await sleep(1);
    }
    res.end();
  });
  const stream = await provider(t, upstream).streamChat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], stream: true }, ctx());
  const chunks = await collect(stream);
  assert.equal(chunks.length, 5);
  assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), 'Hello');
  assert.equal(chunks[3]!.choices[0]!.finish_reason, 'stop');
  assert.deepEqual(chunks[4]!.usage, { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
  const sent = upstream.requests[0]!.body;
  assert.equal(sent.stream, true);
  assert.deepEqual(sent.stream_options, { include_usage: true }, 'usage is always requested upstream');
  assert.equal(upstream.requests[0]!.headers.accept, 'text/event-stream');
});

test('429 is rate_limited with retry-after in seconds or as an HTTP date, mapped to 429', async (t) => {
  const upstream = await startFakeUpstream(t);
  upstream.handle((_req, res) => sendJson(res, 429, { error: { message: 'Rate limit reached', type: 'requests' } }, { 'retry-after': '7' }));
  const p = provider(t, upstream);
  const first = await rejectsWith(p.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'rate_limited');
  assert.equal(first.retryAfterSeconds, 7);
  assert.equal(first.upstreamStatus, 429);
  assert.equal(first.retryable, true);
  assert.deepEqual(
    { status: providerErrorStatus(first).status, retryAfter: providerErrorStatus(first).retryAfter, type: providerErrorStatus(first).type },
    { status: 429, retryAfter: 7, type: 'rate_limit_error' },
  );
  upstream.handle((_req, res) => sendJson(res, 429, { error: { message: 'slow down' } }, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }));
  const dated = await rejectsWith(p.streamChat({ model: 'gpt-4o', messages: [] }, ctx()), 'rate_limited');
  assert.ok(dated.retryAfterSeconds! >= 28 && dated.retryAfterSeconds! <= 31, String(dated.retryAfterSeconds));
});

test('5xx is upstream_error (502), never carrying the upstream body to the client', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 503, { error: { message: 'overloaded' } }));
  const error = await rejectsWith(provider(t, upstream).chat({ model: 'gpt-4o', messages: [] }, ctx()), 'upstream_error');
  assert.equal(error.retryable, true);
  const http = providerErrorStatus(error);
  assert.equal(http.status, 502);
  assert.equal(http.code, 'upstream_error');
  assert.doesNotMatch(http.message, /overloaded/);
});

test('other 4xx are rejected with the upstream message and the key masked; upstream 401 becomes 502', async (t) => {
  const upstream = await startFakeUpstream(t);
  upstream.handle((_req, res) => sendJson(res, 400, { error: { message: `Invalid value for temperature (key ${KEY})` } }));
  const p = provider(t, upstream);
  const rejected = await rejectsWith(p.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'rejected');
  assert.equal(rejected.retryable, false);
  assert.doesNotMatch(rejected.message, /0123456789abcdef/);
  assert.match(rejected.message, /Invalid value for temperature/);
  assert.equal(providerErrorStatus(rejected).status, 400);
  upstream.handle((_req, res) => sendJson(res, 401, { error: { message: 'Incorrect API key provided: sk-live-****cdef' } }));
  const auth = await rejectsWith(p.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'rejected');
  assert.equal(providerErrorStatus(auth).status, 502);
  upstream.handle((_req, res) => sendJson(res, 408, { error: { message: 'request timeout' } }));
  await rejectsWith(p.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'timeout');
});

test('a stream whose headers do not arrive in time is a timeout (504)', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => untilClientCloses(res));
  const error = await rejectsWith(
    provider(t, upstream, { streamHeadersMs: 150 }).streamChat({ model: 'gpt-4o', messages: [] }, ctx()),
    'timeout',
  );
  assert.equal(providerErrorStatus(error).status, 504);
});

test('a buffered call past its deadline and a stream silent past its idle timeout are timeouts', async (t) => {
  const upstream = await startFakeUpstream(t);
  upstream.handle((_req, res) => untilClientCloses(res));
  await rejectsWith(provider(t, upstream, { bufferedMs: 150 }).chat({ model: 'gpt-4o', messages: [] }, ctx()), 'timeout');
  upstream.handle(async (_req, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('a'))}\n\n`);
    await untilClientCloses(res);
  });
  const stream = await provider(t, upstream, { streamIdleMs: 150 }).streamChat({ model: 'gpt-4o', messages: [] }, ctx());
  await rejectsWith(collect(stream), 'timeout');
});

test('a malformed SSE event mid-stream is bad_response (502) after the chunks before it', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('ok'))}\n\n`);
    res.write('data: {"id": "chatcmpl-fake", "choices": [\n\n');
    res.end('data: [DONE]\n\n');
  });
  const stream = await provider(t, upstream).streamChat({ model: 'gpt-4o', messages: [] }, ctx());
  const seen: ChatChunk[] = [];
  const error = await rejectsWith(
    (async () => {
      for await (const chunk of stream) seen.push(chunk);
    })(),
    'bad_response',
  );
  assert.equal(seen.length, 1);
  assert.equal(providerErrorStatus(error).status, 502);
});

test('a stream that ends without [DONE] is bad_response', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('partial'))}\n\n`);
    res.end();
  });
  const stream = await provider(t, upstream).streamChat({ model: 'gpt-4o', messages: [] }, ctx());
  const error = await rejectsWith(collect(stream), 'bad_response');
  assert.match(error.message, /\[DONE\]/);
});

test('an error event mid-stream and a non-SSE 200 answer are classified, never relayed as chunks', async (t) => {
  const upstream = await startFakeUpstream(t);
  upstream.handle((_req, res) => {
    startSse(res);
    res.end(`data: ${JSON.stringify({ error: { message: 'server had an error' } })}\n\n`);
  });
  const p = provider(t, upstream);
  await rejectsWith(collect(await p.streamChat({ model: 'gpt-4o', messages: [] }, ctx())), 'upstream_error');
  upstream.handle((_req, res) => sendJson(res, 200, completion('not a stream')));
  await rejectsWith(p.streamChat({ model: 'gpt-4o', messages: [] }, ctx()), 'bad_response');
  upstream.handle((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"id": "chatcmpl-x", "choices": [');
  });
  await rejectsWith(p.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'bad_response');
});

test('aborting the signal mid-stream closes the upstream connection and ends iteration as aborted', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    startSse(res);
    await streamUntilClientCloses(res, (i) => res.write(`data: ${JSON.stringify(contentChunk(`w${i} `))}\n\n`));
    res.end('data: [DONE]\n\n');
  });
  const controller = new AbortController();
  const stream = await provider(t, upstream).streamChat({ model: 'gpt-4o', messages: [] }, { signal: controller.signal });
  let count = 0;
  const error = await rejectsWith(
    (async () => {
      for await (const _chunk of stream) {
        count += 1;
        if (count === 3) controller.abort();
      }
    })(),
    'aborted',
  );
  assert.equal(error.retryable, false);
  const closed = await upstream.clientClosed();
  assert.equal(closed.clientClosed, true, 'the upstream saw the connection close before its answer ended');
  assert.ok(count < 10);
});

test('a buffered answer trickling in past the deadline is cut off by the deadline itself, not an idle timeout', async (t) => {
  // Headers at once and a byte every 40 ms: neither undici's headers timeout nor its idle body timeout (both the
  // deadline's length) fires; only the call's own deadline signal can end it.
  const upstream: FakeUpstream = await startFakeUpstream(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const text = JSON.stringify(completion('slow'));
    for (const char of text) {
      if (res.destroyed) return;
      res.write(char);
      await sleep(40);
    }
    res.end();
  });
  await rejectsWith(provider(t, upstream, { bufferedMs: 300 }).chat({ model: 'gpt-4o', messages: [] }, ctx()), 'timeout');
  // Cut off, not ended: the whole answer takes ~10 s.
  const closed = await upstream.clientClosed();
  assert.equal(closed.clientClosed, true, 'the upstream saw the connection close before its answer ended');
});

test('aborting a buffered call before the answer aborts the upstream request', async (t) => {
  const upstream: FakeUpstream = await startFakeUpstream(t, (_req, res) => untilClientCloses(res));
  const controller = new AbortController();
  const pending = provider(t, upstream).chat({ model: 'gpt-4o', messages: [] }, { signal: controller.signal });
  setTimeout(() => controller.abort(), 100);
  await rejectsWith(pending, 'aborted');
  await upstream.clientClosed();
});

test('an unreachable upstream is a network failure (502)', async (t) => {
  const upstream = await startFakeUpstream(t);
  const dead = { baseUrl: upstream.baseUrl.replace(/:\d+\//, ':1/') };
  const error = await rejectsWith(provider(t, dead).chat({ model: 'gpt-4o', messages: [] }, ctx()), 'network');
  assert.equal(providerErrorStatus(error).status, 502);
});

test('embeddings go to /embeddings as floats and come back index-aligned', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    const answer = { object: 'list', model: 'text-embedding-3-small', data: [
      { object: 'embedding', index: 1, embedding: [1, 1] },
      { object: 'embedding', index: 0, embedding: Buffer.from(new Float32Array([0.5, -0.25]).buffer).toString('base64') },
    ], usage: { prompt_tokens: 4, total_tokens: 4 } };
    assert.equal(req.url, '/v1/embeddings');
    sendJson(res, 200, answer);
  });
  const result = await provider(t, upstream).embed({ model: 'text-embedding-3-small', input: ['a', 'b'], dimensions: 2, user: 'u1' }, ctx());
  assert.deepEqual(upstream.requests[0]!.body, { model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'float', dimensions: 2, user: 'u1' });
  assert.deepEqual(result.vectors, [[0.5, -0.25], [1, 1]]);
  assert.deepEqual(result.usage, { prompt_tokens: 4, total_tokens: 4 });
});

test('embeddings batch refusals (413, or 400 saying the array is too long) are batch_too_large', async (t) => {
  const upstream = await startFakeUpstream(t);
  const p = provider(t, upstream);
  upstream.handle((_req, res) => sendJson(res, 413, { error: { message: 'payload too large' } }));
  await rejectsWith(p.embed({ model: 'text-embedding-3-small', input: ['a', 'b'] }, ctx()), 'batch_too_large');
  upstream.handle((_req, res) =>
    sendJson(res, 400, { error: { message: "Invalid 'input': array too long. Expected an array with maximum length 2, but got an array with length 3 instead." } }),
  );
  await rejectsWith(p.embed({ model: 'text-embedding-3-small', input: ['a', 'b', 'c'] }, ctx()), 'batch_too_large');
  upstream.handle((_req, res) => sendJson(res, 400, { error: { message: 'dimensions is not supported by this model' } }));
  await rejectsWith(p.embed({ model: 'text-embedding-ada-002', input: ['a'], dimensions: 3 }, ctx()), 'rejected');
  upstream.handle((_req, res) => sendJson(res, 200, { object: 'list', data: [{ index: 0, embedding: [1] }] }));
  await rejectsWith(p.embed({ model: 'text-embedding-3-small', input: ['a', 'b'] }, ctx()), 'bad_response');
});
