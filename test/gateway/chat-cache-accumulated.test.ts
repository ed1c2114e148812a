/**
 * An exact-cache hit of a streamed chat answer, as the official `openai` client's stream accumulator
 * (`finalChatCompletion()`) makes it: equal to what it made of the live stream, but for the id and `created` a hit
 * has of its own, buffered or streamed. The upstream is a fake one started by the test, streaming what Azure OpenAI and
 * other providers add to OpenAI's chunks; what svc emits is checked against the OpenAPI document.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { ChatCompletionStream } from 'openai/lib/ChatCompletionStream';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { MAX_WHOLE_FIELD_CHARS } from '../../src/gateway/stream-assembler.ts';
import { build } from '../support/build.ts';
import { startFakeUpstream, startSse, type FakeUpstream } from '../support/fake-upstream.ts';
import { validateAgainst } from '../support/openapi.ts';

async function gateway(t: TestContext, upstream: FakeUpstream) {
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream-secret', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: 20_000 });
  return { ...built, address, client };
}

function sse(res: import('node:http').ServerResponse, chunks: unknown[]): void {
  startSse(res);
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  res.end('data: [DONE]\n\n');
}

type Params = Omit<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming, 'stream'>;

/**
 * The SDK's accumulation of one streamed answer, with the route svc answered it by; each chunk is checked against the
 * OpenAPI document when svc made it (a hit) rather than relayed it.
 */
async function streamed(client: OpenAI, params: Params): Promise<{ final: ChatCompletion; route: string | null }> {
  const { data, response } = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }).withResponse();
  const route = response.headers.get('x-svc-route');
  const accumulator = ChatCompletionStream.fromReadableStream(data.toReadableStream());
  const chunks: unknown[] = [];
  accumulator.on('chunk', (chunk) => chunks.push(chunk));
  const final = await accumulator.finalChatCompletion();
  if (route === 'exact_cache') for (const chunk of chunks) assert.equal(validateAgainst('CreateChatCompletionStreamResponse', chunk), null, JSON.stringify(chunk));
  return { final, route };
}

/** An answer without what a hit has of its own (a new id and `created`, by design). */
function answerOf(completion: ChatCompletion): Record<string, unknown> {
  const { id: _id, created: _created, ...rest } = completion as unknown as Record<string, unknown>;
  return rest;
}

test('an answer with a top-level field over the bound is not stored, and the live client gets it whole', async (t) => {
  const citations = Array.from({ length: Math.ceil(MAX_WHOLE_FIELD_CHARS / 30) }, (_, i) => `https://example.com/source/${i}`);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({ id: 'chatcmpl-big', object: 'chat.completion.chunk', created: 1700000000, model: 'sonar', citations, choices, ...extra });
  const upstream = await startFakeUpstream(t, (_req, res) =>
    sse(res, [
      chunk([{ index: 0, delta: { role: 'assistant', content: 'Many sources.' }, finish_reason: null }]),
      chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]),
      chunk([], { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
    ]),
  );
  const { client } = await gateway(t, upstream);
  const params: Params = { model: 'sonar', messages: [{ role: 'user', content: 'cite everything' }] };
  assert.ok(JSON.stringify(citations).length > MAX_WHOLE_FIELD_CHARS);

  const live = await streamed(client, params);
  assert.equal(live.route, 'live');
  assert.deepEqual((live.final as unknown as Record<string, unknown>).citations, citations);
  assert.equal(live.final.choices[0]!.message.content, 'Many sources.');

  const again = await streamed(client, params);
  assert.equal(again.route, 'live', 'not stored, so asked again');
  assert.equal(upstream.requests.length, 2);
  assert.deepEqual(answerOf(again.final), answerOf(live.final));
});
