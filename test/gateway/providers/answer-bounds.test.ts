/**
 * Upstream answers are read within bounds (src/gateway/providers/bodies.ts): a buffered answer or a stream past
 * `maxAnswerBytes` is a bad_response and its connection is released, so a misbehaving upstream cannot grow svc's heap
 * until the process dies; a buffered messages body cut by the deadline is a timeout; an error body trickling in does
 * not hold a stream's call past the stream headers' deadline.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test, type TestContext } from 'node:test';
import { Agent } from 'undici';
import { createChatCompletionsProvider, type ProviderTimeouts } from '../../../src/gateway/providers/chat-completions.ts';
import { createMessagesProvider } from '../../../src/gateway/providers/messages.ts';
import type { Provider } from '../../../src/gateway/providers/types.ts';
import { completion, sendJson, sleep, startFakeUpstream, startSse, type FakeUpstream } from '../../support/fake-upstream.ts';
import { rejectsWith } from '../../support/provider-errors.ts';

const KEY = 'sk-live-test-0123456789abcdef';
const MAX = 64 * 1024;

function agentFor(t: TestContext): Agent {
  const agent = new Agent();
  t.after(() => agent.close());
  return agent;
}

function chatProvider(t: TestContext, upstream: FakeUpstream, timeouts: Partial<ProviderTimeouts> = {}): Provider {
  return createChatCompletionsProvider({ name: 'chatcomp', apiKey: KEY, baseUrl: upstream.baseUrl, dispatcher: agentFor(t), timeouts, maxAnswerBytes: MAX });
}

function messagesProvider(t: TestContext, upstream: FakeUpstream, timeouts: Partial<ProviderTimeouts> = {}): Provider {
  return createMessagesProvider({ name: 'messages', apiKey: KEY, baseUrl: upstream.baseUrl, dispatcher: agentFor(t), timeouts, maxAnswerBytes: MAX });
}

const ctx = () => ({ signal: new AbortController().signal });

async function drain(stream: Promise<AsyncIterable<unknown>>): Promise<number> {
  let count = 0;
  for await (const _ of await stream) count += 1;
  return count;
}

/** Writes `piece` until the client goes away: an answer that never ends. */
async function endlessly(res: ServerResponse, piece: string): Promise<void> {
  while (!res.destroyed) {
    if (!res.write(piece)) await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
  }
}

const big = (bytes: number) => 'x'.repeat(bytes);

test('a buffered answer past the bound is a bad_response and its connection is released; embeddings may be four times as large', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (req.url === '/v1/embeddings') {
      // ~100 KiB of floats: within four times the bound.
      const embedding = Array.from({ length: 10_000 }, (_, i) => i / 3);
      return sendJson(res, 200, { object: 'list', model: 'e', data: [{ object: 'embedding', index: 0, embedding }], usage: { prompt_tokens: 1, total_tokens: 1 } });
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    void endlessly(res, big(16 * 1024));
  });
  const provider = chatProvider(t, upstream);
  const error = await rejectsWith(provider.chat({ model: 'gpt-4o', messages: [] }, ctx()), 'bad_response');
  assert.match(error.message, /larger than 65536 bytes/);
  assert.equal((await upstream.clientClosed()).clientClosed, true);
  const embedded = await provider.embed({ model: 'e', input: ['a'] }, ctx());
  assert.equal(embedded.vectors[0]!.length, 10_000);
});

test('a stream whose line never ends, or whose tool-call arguments never close, is a bad_response once past the bound', async (t) => {
  const upstream = await startFakeUpstream(t, (req, res) => {
    startSse(res);
    const content = (req.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    if (content === 'endless line') {
      res.write('data: {"x":"');
      void endlessly(res, big(8 * 1024));
      return;
    }
    // Well-formed chunks of one tool call whose arguments go on and on.
    const chunk = (args: string) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: args } }] }, finish_reason: null }] })}\n\n`;
    res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }, finish_reason: null }] })}\n\n`);
    void endlessly(res, chunk(big(4 * 1024)));
  });
  const provider = chatProvider(t, upstream);
  for (const content of ['endless line', 'endless arguments']) {
    const error = await rejectsWith(drain(provider.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content }] }, ctx())), 'bad_response');
    assert.match(error.message, /the upstream stream is larger than 65536 bytes/, content);
  }
  assert.equal(upstream.requests.filter((request) => request.clientClosed).length >= 1, true);
});

test('the responses and messages streams are bounded the same way', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.write('event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"');
    void endlessly(res, big(8 * 1024));
  });
  const responses = rejectsWith(drain(chatProvider(t, upstream).streamResponses({ model: 'gpt-4o', input: 'hi' }, ctx())), 'bad_response');
  assert.match((await responses).message, /larger than 65536 bytes/);
  const messages = rejectsWith(drain(messagesProvider(t, upstream).streamMessages({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, ctx())), 'bad_response');
  assert.match((await messages).message, /larger than 65536 bytes/);
});

test('a buffered messages answer: past the bound a bad_response, cut by the deadline a timeout (as on the other wires)', async (t) => {
  const upstream = await startFakeUpstream(t, async (req, res) => {
    const content = (req.body as { messages: Array<{ content: string }> }).messages[0]!.content;
    res.writeHead(200, { 'content-type': 'application/json' });
    if (content === 'huge') return void endlessly(res, big(16 * 1024));
    // Headers at once, then the body stalls past the deadline.
    res.write('{"type":"message",');
    await sleep(2_000);
    if (!res.destroyed) res.end('"content":[]}');
  });
  const ask = (provider: Provider, content: string) => provider.messages({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content }] }, ctx());
  // The bound under a deadline of a minute: 300 ms could fire first on a loaded machine, before 64 KiB arrived.
  assert.match((await rejectsWith(ask(messagesProvider(t, upstream, { bufferedMs: 60_000 }), 'huge'), 'bad_response')).message, /larger than 65536 bytes/);
  await rejectsWith(ask(messagesProvider(t, upstream, { bufferedMs: 300 }), 'stall'), 'timeout');
});

test("an error body trickling in does not hold a stream's call past the stream headers' deadline", async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '3' });
    for (const char of JSON.stringify({ error: { message: 'slow down', type: 'rate_limit' } })) {
      if (res.destroyed) return;
      res.write(char);
      await sleep(100);
    }
    res.end();
  });
  for (const provider of [chatProvider(t, upstream, { streamHeadersMs: 300 }), messagesProvider(t, upstream, { streamHeadersMs: 300 })]) {
    const started = performance.now();
    const call =
      provider.name === 'messages'
        ? provider.streamMessages({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }, ctx())
        : provider.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, ctx());
    await rejectsWith(call, 'rate_limited');
    const elapsed = performance.now() - started;
    assert.ok(elapsed < 2_000, `${provider.name}: answered after ${Math.round(elapsed)} ms`);
  }
});

test('answers within the bound are read whole, a multi-byte character split between chunks and a byte-order mark too', async (t) => {
  const upstream = await startFakeUpstream(t, async (req, res) => {
    if ((req.body as { model: string }).model === 'bom') {
      const bytes = Buffer.from(`\uFEFF${JSON.stringify(completion('ünïcödé ✓'))}`, 'utf8');
      res.writeHead(200, { 'content-type': 'application/json' });
      // One byte at a time: every multi-byte character arrives split.
      for (const byte of bytes) res.write(Buffer.from([byte]));
      return void res.end();
    }
    sendJson(res, 200, completion(big(MAX / 2)));
  });
  const provider = chatProvider(t, upstream);
  assert.equal((await provider.chat({ model: 'gpt-4o', messages: [] }, ctx())).choices[0]!.message.content, big(MAX / 2));
  assert.equal((await provider.chat({ model: 'bom', messages: [] }, ctx())).choices[0]!.message.content, 'ünïcödé ✓');
});

test('a stream of comments only is a timeout once the buffered deadline passes; comments before the first event in time are fine', async (t) => {
  const upstream = await startFakeUpstream(t, async (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const body = req.body as { messages?: Array<{ content: string }>; input?: string };
    const first = body.messages?.[0]?.content ?? body.input ?? '';
    if (first === 'then an answer') {
      res.write(': warming up\n\n');
      await sleep(30);
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    while (!res.destroyed) {
      res.write(': keep-alive\n\n');
      await sleep(20);
    }
  });
  const timeouts = { bufferedMs: 300 };
  const chat = chatProvider(t, upstream, timeouts);
  const started = Date.now();
  const error = await rejectsWith(drain(chat.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'comments only' }] }, ctx())), 'timeout');
  assert.match(error.message, /no event within 300 ms/);
  assert.ok(Date.now() - started < 5_000);
  await rejectsWith(drain(chat.streamResponses({ model: 'gpt-4o', input: 'comments only' }, ctx())), 'timeout');
  await rejectsWith(drain(messagesProvider(t, upstream, timeouts).streamMessages({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'comments only' }] }, ctx())), 'timeout');
  assert.equal(await drain(chat.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'then an answer' }] }, ctx())), 1);
});

test('the wall clock jumping forward an hour (NTP, a VM resumed) while a stream sends comments before its first event is no timeout: the deadline is elapsed time', async (t) => {
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': warming up\n\n');
    await sleep(30);
    res.write(': still warming up\n\n');
    await sleep(30);
    res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o', choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  });
  const chat = chatProvider(t, upstream, { bufferedMs: 60_000 });
  const stream = chat.streamChat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'warm up first' }] }, ctx());
  await stream;
  const wallNow = Date.now;
  t.mock.method(Date, 'now', () => wallNow() + 3_600_000);
  assert.equal(await drain(stream), 1);
});
