/**
 * An upstream refusing svc's own provider account (401, 402, 403: `refusedGatewayAccount`) is what a second key is for
 * (docs/providers.md, "Which provider answers"): the platform key revoked or out of credit fails over to the fallback
 * key before anything reached the client, on the chat, responses and embeddings wires, recorded as other fallbacks
 * are; with no candidate left it is the 502 it always was. One fake upstream stands for both keys (the fallback key
 * without its own address is a second key for the same upstream): it refuses the platform key and serves the other.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, contentChunk, embeddingsAnswer, sendChunks, sendJson, startFakeUpstream, startSse, type FakeUpstream, type RecordedRequest } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

const PLATFORM_KEY = 'sk-platform-revoked';
const FALLBACK_KEY = 'sk-fallback-good';

/** What the upstream says of a key it refuses, by status (the chat-completions family's bodies). */
const REFUSALS: Record<number, { message: string; type: string; code: string }> = {
  401: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' },
  402: { message: 'Your credit balance is too low.', type: 'billing_error', code: 'billing_error' },
  403: { message: 'You are not allowed to use this model.', type: 'permission_error', code: 'permission_error' },
};

const RESPONSE = {
  id: 'resp_up',
  object: 'response',
  created_at: 1700000000,
  status: 'completed',
  model: 'gpt-4o-mini',
  output: [{ id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'From the fallback', annotations: [] }] }],
  usage: { input_tokens: 9, output_tokens: 3, total_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
};

function serveResponses(request: RecordedRequest, res: import('node:http').ServerResponse): void {
  if (!(request.body as { stream?: boolean }).stream) return sendJson(res, 200, RESPONSE);
  startSse(res);
  const created = { ...RESPONSE, status: 'in_progress', output: [], usage: null };
  const events = [
    { type: 'response.created', sequence_number: 0, response: created },
    { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...RESPONSE.output[0], status: 'in_progress', content: [] } },
    { type: 'response.content_part.added', sequence_number: 2, item_id: 'msg_up', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } },
    { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_up', output_index: 0, content_index: 0, delta: 'From the fallback', logprobs: [] },
    { type: 'response.output_text.done', sequence_number: 4, item_id: 'msg_up', output_index: 0, content_index: 0, text: 'From the fallback', logprobs: [] },
    { type: 'response.content_part.done', sequence_number: 5, item_id: 'msg_up', output_index: 0, content_index: 0, part: RESPONSE.output[0]!.content[0] },
    { type: 'response.output_item.done', sequence_number: 6, output_index: 0, item: RESPONSE.output[0] },
    { type: 'response.completed', sequence_number: 7, response: RESPONSE },
  ];
  for (const event of events) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  res.end();
}

/** The fallback key's answer to any wire's request. */
function serve(request: RecordedRequest, res: import('node:http').ServerResponse): void {
  const body = request.body as { stream?: boolean; input?: unknown };
  if (request.url.endsWith('/embeddings')) {
    const inputs = Array.isArray(body.input) ? body.input : [body.input];
    return sendJson(res, 200, embeddingsAnswer(inputs, 'text-embedding-3-small'));
  }
  if (request.url.endsWith('/responses')) return serveResponses(request, res);
  if (!body.stream) return sendJson(res, 200, completion('From the fallback'));
  sendChunks(res, [contentChunk('From the '), { ...contentChunk('fallback'), choices: [{ index: 0, delta: { content: 'fallback' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }]);
}

/** One upstream that refuses the platform key with `refusal.status` and serves the fallback key. */
async function upstream(t: TestContext) {
  const refusal = { status: 401 };
  const fake = await startFakeUpstream(t, (request, res) => {
    if (request.headers.authorization === `Bearer ${PLATFORM_KEY}`) {
      const { message, type, code } = REFUSALS[refusal.status]!;
      return sendJson(res, refusal.status, { error: { message, type, param: null, code } });
    }
    if (request.headers.authorization !== `Bearer ${FALLBACK_KEY}`) return sendJson(res, 401, { error: { message: 'who are you' } });
    serve(request, res);
  });
  return { fake, refusal };
}

async function gateway(t: TestContext, fake: FakeUpstream, withFallback: boolean) {
  const env: Record<string, string> = { CHATCOMP_API_KEY: PLATFORM_KEY, CHATCOMP_BASE_URL: fake.baseUrl };
  if (withFallback) env.CHATCOMP_FALLBACK_API_KEY = FALLBACK_KEY;
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) }) };
}

/** The keys the upstream was called with since `from`. */
const keysAsked = (fake: FakeUpstream, from: number) => fake.requests.slice(from).map((request) => request.headers.authorization?.slice('Bearer '.length));

/** The run's attempts, fallback and economics: the refused platform key's failed attempt, then the fallback's. */
async function expectFailedOver(app: Awaited<ReturnType<typeof gateway>>['app'], runId: string | null, status: number, label: string) {
  assert.ok(runId, label);
  const detail = json(await app.inject({ url: `/api/v1/runs/${runId}` }));
  assert.equal(detail.run.status, 'completed', label);
  assert.deepEqual(detail.run.routeExplanation.fallback, { from: 'chatcomp', to: 'chatcomp-fallback', reason: 'rejected' }, label);
  assert.deepEqual(
    detail.attempts.map((attempt: any) => [attempt.provider, attempt.outcome, attempt.errorKind, attempt.upstreamStatus]),
    [
      ['chatcomp', 'failed', 'rejected', status],
      ['chatcomp-fallback', 'success', null, null],
    ],
    label,
  );
  assert.ok(
    detail.events.some((event: any) => event.type === 'provider.fallback'),
    label,
  );
  const economics = json(await app.inject({ url: `/api/v1/runs/${runId}/economics` }));
  assert.deepEqual(
    economics.attempts.served.map((attempt: any) => [attempt.provider, attempt.outcome, attempt.costUsd]),
    [
      ['chatcomp', 'failed', 0],
      ['chatcomp-fallback', 'success', detail.attempts[1].costUsd],
    ],
    label,
  );
  assert.equal(economics.cost.providerUsd, detail.attempts[1].costUsd, label);
  assert.ok(economics.cost.providerUsd > 0, label);
}

let counter = 0;
const text = (what: string) => `${what} #${++counter} ${process.hrtime.bigint()}`;

test("an upstream refusing the platform key (401, 402, 403) fails over to the fallback key on the chat, responses and embeddings wires, buffered and streamed, recorded as a fallback with the refused attempt first", async (t) => {
  const { fake, refusal } = await upstream(t);
  const { app, client } = await gateway(t, fake, true);
  for (refusal.status of [401, 402, 403]) {
    for (const stream of [false, true]) {
      const label = `chat ${refusal.status} stream=${stream}`;
      const from = fake.requests.length;
      const params = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: text(label) }] };
      if (stream) {
        const { data, response } = await client.chat.completions.create({ ...params, stream: true }).withResponse();
        let answer = '';
        for await (const chunk of data) answer += chunk.choices[0]?.delta.content ?? '';
        assert.equal(answer, 'From the fallback', label);
        await expectFailedOver(app, response.headers.get('x-svc-run-id'), refusal.status, label);
      } else {
        const { data, response } = await client.chat.completions.create(params).withResponse();
        assert.equal(data.choices[0]!.message.content, 'From the fallback', label);
        await expectFailedOver(app, response.headers.get('x-svc-run-id'), refusal.status, label);
      }
      assert.deepEqual(keysAsked(fake, from), [PLATFORM_KEY, FALLBACK_KEY], label);
    }

    for (const stream of [false, true]) {
      const label = `responses ${refusal.status} stream=${stream}`;
      const from = fake.requests.length;
      const params = { model: 'gpt-4o-mini', input: text(label) };
      if (stream) {
        const { data, response } = await client.responses.create({ ...params, stream: true }).withResponse();
        let answer = '';
        for await (const event of data) if (event.type === 'response.output_text.delta') answer += event.delta;
        assert.equal(answer, 'From the fallback', label);
        await expectFailedOver(app, response.headers.get('x-svc-run-id'), refusal.status, label);
      } else {
        const { data, response } = await client.responses.create(params).withResponse();
        assert.equal(data.output_text, 'From the fallback', label);
        await expectFailedOver(app, response.headers.get('x-svc-run-id'), refusal.status, label);
      }
      assert.deepEqual(keysAsked(fake, from), [PLATFORM_KEY, FALLBACK_KEY], label);
    }

    const label = `embeddings ${refusal.status}`;
    const from = fake.requests.length;
    const embedded = await client.embeddings.create({ model: 'text-embedding-3-small', input: [text(label), text(label)], encoding_format: 'float' });
    assert.deepEqual(embedded.data.map((item) => item.embedding), [[0, 0.5, 0.5], [1, 0.5, 0.5]], label);
    assert.deepEqual(keysAsked(fake, from), [PLATFORM_KEY, FALLBACK_KEY], label);
  }
});

test('with no fallback key, an upstream refusing the platform key is the 502 upstream_error it was, on every wire, the upstream asked once', async (t) => {
  const { fake, refusal } = await upstream(t);
  const { app, client } = await gateway(t, fake, false);
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['chat', () => client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text('chat') }] })],
    ['chat stream', async () => {
      for await (const _ of await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text('chat') }], stream: true }));
    }],
    ['responses', () => client.responses.create({ model: 'gpt-4o-mini', input: text('responses') })],
    ['responses stream', () => client.responses.stream({ model: 'gpt-4o-mini', input: text('responses') }).finalResponse()],
    ['embeddings', () => client.embeddings.create({ model: 'text-embedding-3-small', input: text('embeddings') })],
  ];
  for (refusal.status of [401, 402, 403]) {
    for (const [wire, call] of calls) {
      const label = `${wire} ${refusal.status}`;
      const from = fake.requests.length;
      let runId: string | null = null;
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof OpenAI.APIError, label);
        assert.equal(error.status, 502, label);
        assert.equal(error.code, 'upstream_error', label);
        runId = error.headers?.get('x-svc-run-id') ?? null;
        return true;
      });
      assert.deepEqual(keysAsked(fake, from), [PLATFORM_KEY], label);
      if (wire === 'embeddings') continue;
      const detail = json(await app.inject({ url: `/api/v1/runs/${runId}` }));
      assert.equal(detail.run.status, 'failed', label);
      assert.equal(detail.run.routeExplanation.fallback, null, label);
      assert.deepEqual(detail.attempts.map((attempt: any) => [attempt.provider, attempt.outcome, attempt.upstreamStatus]), [['chatcomp', 'failed', refusal.status]], label);
    }
  }
});

test('a refusal of the account said after a stream started is not failed over: the stream ends with its error, the fallback never asked', async (t) => {
  const fake = await startFakeUpstream(t, (request, res) => {
    if (request.headers.authorization !== `Bearer ${PLATFORM_KEY}`) return serve(request, res);
    startSse(res);
    res.write(`data: ${JSON.stringify(contentChunk('partial'))}\n\n`);
    res.write(`data: ${JSON.stringify({ error: { message: 'Your credit balance is too low.', type: 'billing_error', code: 'billing_error' } })}\n\n`);
    res.end();
  });
  const { client } = await gateway(t, fake, true);
  let answer = '';
  await assert.rejects(async () => {
    for await (const chunk of await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: text('mid') }], stream: true })) {
      answer += chunk.choices[0]?.delta.content ?? '';
    }
  });
  assert.equal(answer, 'partial');
  assert.deepEqual(keysAsked(fake, 0), [PLATFORM_KEY]);
});
