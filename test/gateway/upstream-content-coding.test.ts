/**
 * Upstream answers in a content coding. svc asks every upstream for none (`accept-encoding: identity`; a request
 * without the header takes any coding, RFC 9110 section 12.5.3) and fails a 2xx answer encoded anyway as a
 * bad_response naming its coding, failed over like any answer it cannot read and never cached; an error answer's body
 * is decoded for its message.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, contentChunk, messageEvents, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { finishedRun } from '../support/finished-runs.ts';
import { loadScaled } from '../support/load-scaled.ts';

const FINISH = { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };

const MESSAGE = {
  id: 'msg_up',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content: [{ type: 'text', text: 'unzipped' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 5, output_tokens: 2 },
};

/** The body of an answer of the chat or messages wire, buffered or as its event stream, saying `text`. */
function answerBody(path: string, stream: boolean, text: string): { type: string; body: string } {
  if (path.endsWith('/messages')) {
    if (!stream) return { type: 'application/json', body: JSON.stringify({ ...MESSAGE, content: [{ type: 'text', text }] }) };
    return { type: 'text/event-stream', body: messageEvents(text).map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join('') };
  }
  if (!stream) return { type: 'application/json', body: JSON.stringify(completion(text)) };
  return { type: 'text/event-stream', body: [contentChunk(text), FINISH].map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join('') + 'data: [DONE]\n\n' };
}

/** Whether a request's accept-encoding takes gzip: no header takes any coding (RFC 9110 section 12.5.3). */
function takesGzip(headers: IncomingHttpHeaders): boolean {
  const value = headers['accept-encoding'];
  return value === undefined || /\b(gzip|\*)\b/.test(value);
}

/** Answer `text`, gzipped when `gzip` says so; `corrupt` writes bytes no gzip reader takes in its place. */
function answer(res: ServerResponse, request: { url: string; body: any }, text: string, coding: 'gzip' | 'corrupt' | null): void {
  const { type, body } = answerBody(request.url, Boolean(request.body?.stream), text);
  if (coding === null) {
    res.writeHead(200, { 'content-type': type });
    res.end(body);
    return;
  }
  res.writeHead(200, { 'content-type': type, 'content-encoding': 'gzip' });
  res.end(coding === 'gzip' ? gzipSync(body) : Buffer.from('not gzip at all'));
}

/** An answer read to its end: a stream's events are read (the clients raise a stream's failure as they do a call's). */
async function readAll(answer: unknown): Promise<unknown> {
  if (answer && typeof answer === 'object' && Symbol.asyncIterator in answer) for await (const _event of answer as AsyncIterable<unknown>);
  return answer;
}

async function gateway(t: test.TestContext, env: Record<string, string>) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const timeout = loadScaled(20_000);
  return {
    ...built,
    openai: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout }),
    anthropic: new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 0, timeout }),
  };
}

test('an upstream that compresses whatever the request does not refuse answers svc uncompressed: the official clients get its answer, buffered and streamed, on the chat and messages wires', async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => answer(res, request, 'unzipped', takesGzip(request.headers) ? 'gzip' : null));
  const { openai, anthropic } = await gateway(t, {
    CHATCOMP_API_KEY: 'sk-upstream-secret',
    CHATCOMP_BASE_URL: upstream.baseUrl,
    MESSAGES_API_KEY: 'sk-messages-secret',
    MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, ''),
  });
  const chat = await openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'buffered' }] });
  assert.equal(chat.choices[0]!.message.content, 'unzipped');
  const streamed = await openai.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'streamed' }] }).finalChatCompletion();
  assert.equal(streamed.choices[0]!.message.content, 'unzipped');
  const message = await anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'buffered' }] });
  assert.deepEqual(message.content.map((block) => block.type === 'text' && block.text), ['unzipped']);
  const streamedMessage = await anthropic.messages.stream({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'streamed' }] }).finalMessage();
  assert.deepEqual(streamedMessage.content.map((block) => block.type === 'text' && block.text), ['unzipped']);
  assert.deepEqual(
    upstream.requests.map((request) => request.headers['accept-encoding']),
    ['identity', 'identity', 'identity', 'identity'],
  );
});

test('an answer compressed though svc asked for none (gzip, or bytes that are not) is a bad_response naming its coding: failed over to the fallback, or a 502 the clients raise as InternalServerError, never cached', async (t) => {
  let coding: 'gzip' | 'corrupt' = 'gzip';
  const compressing = await startFakeUpstream(t, (request, res) => answer(res, request, 'zipped', coding));
  const fallback = await startFakeUpstream(t, (request, res) => (request.body.stream ? sendChunks(res, [contentChunk('plain'), FINISH]) : sendJson(res, 200, completion('plain'))));
  const alone = await gateway(t, {
    CHATCOMP_API_KEY: 'sk-upstream-secret',
    CHATCOMP_BASE_URL: compressing.baseUrl,
    MESSAGES_API_KEY: 'sk-messages-secret',
    MESSAGES_BASE_URL: compressing.baseUrl.replace(/\/v1$/, ''),
  });
  const both = await gateway(t, {
    CHATCOMP_API_KEY: 'sk-upstream-secret',
    CHATCOMP_BASE_URL: compressing.baseUrl,
    CHATCOMP_FALLBACK_API_KEY: 'sk-fallback-secret',
    CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl,
  });
  for (const stream of [false, true]) {
    for (const each of ['gzip', 'corrupt'] as const) {
      coding = each;
      const label = `${each}, stream: ${stream}`;
      const messages = [{ role: 'user' as const, content: `${label}` }];
      for (let repeat = 0; repeat < 2; repeat++) {
        const asked = compressing.requests.length;
        await assert.rejects(alone.openai.chat.completions.create({ model: 'gpt-4o-mini', messages, stream }).then(readAll), (error: unknown) => {
          assert.ok(error instanceof OpenAI.InternalServerError, `${label}: ${String(error)}`);
          assert.equal(error.status, 502);
          assert.equal(error.code, 'upstream_error');
          return true;
        });
        assert.equal(compressing.requests.length, asked + 1, `${label}: asked again, nothing cached (repeat ${repeat})`);
      }
      const runs = json(await alone.app.inject({ url: '/api/v1/runs?limit=1' })).runs;
      const detail = await finishedRun(alone.app, runs[0].id);
      assert.equal(detail.run.status, 'failed', label);
      assert.equal(detail.run.error.kind, 'bad_response', label);
      assert.match(detail.run.error.message, /content coding "gzip"/, label);

      const failover = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: `failover ${label}` }] };
      const answered = stream ? await both.openai.chat.completions.stream(failover).finalChatCompletion() : await both.openai.chat.completions.create(failover);
      assert.equal(answered.choices[0]!.message.content, 'plain', label);
      const failedOver = await finishedRun(both.app, json(await both.app.inject({ url: '/api/v1/runs?limit=1' })).runs[0].id);
      assert.deepEqual(failedOver.attempts.map((attempt: any) => [attempt.provider, attempt.outcome, attempt.errorKind ?? null]), [['chatcomp', 'failed', 'bad_response'], ['chatcomp-fallback', 'success', null]], label);

      await assert.rejects(alone.anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, messages }).then(readAll), (error: unknown) => {
        assert.ok(error instanceof Anthropic.InternalServerError, `${label}: ${String(error)}`);
        assert.equal(error.status, 502);
        return true;
      });
      const messagesRun = await finishedRun(alone.app, json(await alone.app.inject({ url: '/api/v1/runs?limit=1' })).runs[0].id);
      assert.equal(messagesRun.run.error.kind, 'bad_response', label);
      assert.match(messagesRun.run.error.message, /content coding "gzip"/, label);
    }
  }
});

test("an error answer compressed though svc asked for none is read in its coding (gzip, x-gzip, deflate, br, or up to five of them): the client gets the upstream's message on the chat and messages wires, and an embeddings batch it refuses as too large is split; bytes that do not decode, a coding svc does not know, or more than five codings leave the status alone, never the bytes as text", async (t) => {
  const zlib = await import('node:zlib');
  const gzipTimes = (bytes: Buffer, times: number): Buffer => (times === 0 ? bytes : gzipTimes(zlib.gzipSync(bytes), times - 1));
  const encoders: Record<string, (bytes: Buffer) => Buffer> = {
    gzip: zlib.gzipSync,
    'x-gzip': zlib.gzipSync,
    deflate: zlib.deflateSync,
    br: zlib.brotliCompressSync,
    'deflate, gzip': (bytes) => zlib.gzipSync(zlib.deflateSync(bytes)),
    // As many codings as undici's own decoders take, and one more: each is a decoder made before any byte is read.
    [Array(5).fill('gzip').join(', ')]: (bytes) => gzipTimes(bytes, 5),
    [Array(6).fill('gzip').join(', ')]: (bytes) => gzipTimes(bytes, 6),
    corrupt: () => Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0xfe, 0x80, 0x81, 0x00, 0x00]),
    zstd: (bytes) => zlib.gzipSync(bytes),
  };
  let coding = 'gzip';
  const upstream = await startFakeUpstream(t, (request, res) => {
    const isMessages = request.url.endsWith('/messages');
    const embeddingsBatch = request.url.endsWith('/embeddings') && (request.body.input as unknown[]).length > 1;
    if (request.url.endsWith('/embeddings') && !embeddingsBatch) {
      return sendJson(res, 200, { object: 'list', model: 'text-embedding-3-small', data: [{ object: 'embedding', index: 0, embedding: [0.5, 0.5] }], usage: { prompt_tokens: 1, total_tokens: 1 } });
    }
    const message = embeddingsBatch ? "Invalid 'input': array too long. Expected an array with maximum length 1." : "Invalid 'temperature': decimal above maximum value.";
    const body = isMessages ? { type: 'error', error: { type: 'invalid_request_error', message } } : { error: { message, type: 'invalid_request_error', param: 'temperature', code: 'decimal_above_max_value' } };
    res.writeHead(400, { 'content-type': 'application/json', 'content-encoding': coding === 'corrupt' ? 'gzip' : coding });
    res.end(encoders[coding]!(Buffer.from(JSON.stringify(body))));
  });
  const { openai, anthropic } = await gateway(t, {
    CHATCOMP_API_KEY: 'sk-upstream-secret',
    CHATCOMP_BASE_URL: upstream.baseUrl,
    MESSAGES_API_KEY: 'sk-messages-secret',
    MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, ''),
  });
  for (const each of Object.keys(encoders)) {
    coding = each;
    const decoded = each !== 'corrupt' && each !== 'zstd' && each.split(',').length <= 5;
    for (const stream of [false, true]) {
      const label = `${each}, stream: ${stream}`;
      await assert.rejects(openai.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: label }], stream }).then(readAll), (error: unknown) => {
        assert.ok(error instanceof OpenAI.BadRequestError, `${label}: ${String(error)}`);
        if (decoded) assert.match(error.message, /Invalid 'temperature': decimal above maximum value\./, label);
        else assert.match(error.message, /upstream answered HTTP 400/, label);
        return true;
      });
      await assert.rejects(anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: label }] }).then(readAll), (error: unknown) => {
        assert.ok(error instanceof Anthropic.BadRequestError, `${label}: ${String(error)}`);
        if (decoded) assert.match(error.message, /Invalid 'temperature': decimal above maximum value\./, label);
        else assert.match(error.message, /upstream answered HTTP 400/, label);
        return true;
      });
    }
    if (decoded) {
      const embedded = await openai.embeddings.create({ model: 'text-embedding-3-small', input: ['a', 'b'], encoding_format: 'float' });
      assert.deepEqual(embedded.data.map((item) => item.embedding), [[0.5, 0.5], [0.5, 0.5]], each);
    }
  }
});
