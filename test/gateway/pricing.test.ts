/**
 * Cost and its `priced` flag as runs record them (docs/gateway.md, "Cost"), through the official client against a
 * listening svc: live runs, exact-cache hits, and the mock (free).
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, contentChunk, sendJson, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { finishedRun } from '../support/finished-runs.ts';

async function listening(t: TestContext, env: Record<string, string> = {}) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0 }) };
}

let counter = 0;
const unique = (text: string) => `${text} #${++counter} ${process.hrtime.bigint()}`;

test('an exact-cache hit of a model without a list price says priced: false, as its live run does; of the free mock, priced: true', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('ok', 'acme-private-7b')));
  const live = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const mock = await listening(t);
  for (const [label, { client, app }, priced] of [['live upstream', live, false], ['mock', mock, true]] as const) {
    const params = { model: 'acme-private-7b', messages: [{ role: 'user' as const, content: unique('x') }] };
    const first = await client.chat.completions.create(params).withResponse();
    const again = await client.chat.completions.create(params).withResponse();
    assert.equal(again.response.headers.get('x-svc-route'), 'exact_cache', label);
    const liveRun = json(await app.inject({ url: `/api/v1/runs/${first.response.headers.get('x-svc-run-id')}` })).run;
    const hitId = again.response.headers.get('x-svc-run-id');
    const hitRun = json(await app.inject({ url: `/api/v1/runs/${hitId}` })).run;
    assert.equal(liveRun.priced, priced, label);
    assert.equal(hitRun.priced, priced, `${label}: the hit says what its live run says`);
    assert.equal(json(await app.inject({ url: `/api/v1/runs/${hitId}/economics` })).priced, priced, label);
  }
});

test("the messages wire's prompt-cache tokens count as input and are priced at their own rates, buffered and streamed", async (t) => {
  // claude-sonnet-4: input $3, output $15; a cache read $0.30, a write $3.75 (5 minutes) or $6 (1 hour) per million.
  const usage = {
    input_tokens: 100,
    cache_creation_input_tokens: 1000,
    cache_read_input_tokens: 10_000,
    cache_creation: { ephemeral_5m_input_tokens: 400, ephemeral_1h_input_tokens: 600 },
    output_tokens: 50,
  };
  const expected = (100 * 3 + 400 * 3.75 + 600 * 6 + 10_000 * 0.3 + 50 * 15) / 1e6;
  const message = { id: 'msg_up', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [{ type: 'text', text: 'cached' }], stop_reason: 'end_turn', stop_sequence: null, usage };
  let cut = false;
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) return sendJson(res, 200, message);
    startSse(res);
    const events: Array<Record<string, unknown>> = [
      { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'cached' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 50 } },
      { type: 'message_stop' },
    ];
    res.end((cut ? events.slice(0, 3) : events).map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
  });
  const { address, app } = await listening(t, { MESSAGES_API_KEY: 'sk-messages', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') });
  for (const stream of [false, true]) {
    const answer = await fetch(`${address}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream, messages: [{ role: 'user', content: unique('cached prompt') }] }),
    });
    assert.equal(answer.status, 200);
    await answer.text();
    const detail = await finishedRun(app, answer.headers.get('x-svc-run-id'));
    const label = stream ? 'streamed' : 'buffered';
    assert.equal(detail.run.status, 'completed', label);
    assert.deepEqual(detail.run.usage, { promptTokens: 11_100, completionTokens: 50, totalTokens: 11_150 }, label);
    assert.ok(Math.abs(detail.run.costUsd - expected) < 1e-12, `${label}: ${detail.run.costUsd} != ${expected}`);
    assert.equal(detail.attempts[0].promptTokens, 11_100, label);
  }

  // A stream cut after message_start keeps the reported prompt and its cache parts; only the output is estimated.
  cut = true;
  const answer = await fetch(`${address}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: unique('cut') }] }),
  });
  await answer.text();
  const { run } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
  assert.equal(run.status, 'failed');
  assert.equal(run.usage.promptTokens, 11_100);
  const partial = (100 * 3 + 400 * 3.75 + 600 * 6 + 10_000 * 0.3 + run.usage.completionTokens * 15) / 1e6;
  assert.ok(Math.abs(run.costUsd - partial) < 1e-12, `${run.costUsd} != ${partial}`);
});

test("cached prompt tokens the chat and responses wires report (part of their prompt) are priced at the model's cached-input rate", async (t) => {
  // gpt-4o-mini: input $0.15, cached input $0.075, output $0.60 per million.
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (req.url.endsWith('/chat/completions')) {
      return sendJson(res, 200, { ...completion('ok'), usage: { prompt_tokens: 10_000, completion_tokens: 100, total_tokens: 10_100, prompt_tokens_details: { cached_tokens: 8000 } } });
    }
    const item = { id: 'msg_up', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] };
    sendJson(res, 200, {
      id: 'resp_up', object: 'response', created_at: 1700000000, status: 'completed', model: 'gpt-4o-mini', output: [item],
      usage: { input_tokens: 10_000, output_tokens: 100, total_tokens: 10_100, input_tokens_details: { cached_tokens: 8000 }, output_tokens_details: { reasoning_tokens: 0 } },
    });
  });
  const { client, app } = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const expected = (2000 * 0.15 + 8000 * 0.075 + 100 * 0.6) / 1e6;
  const chat = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('cached') }] }).withResponse();
  const responses = await client.responses.create({ model: 'gpt-4o-mini', input: unique('cached') }).withResponse();
  for (const [label, { response }] of [['chat', chat], ['responses', responses]] as const) {
    const run = json(await app.inject({ url: `/api/v1/runs/${response.headers.get('x-svc-run-id')}` })).run;
    assert.equal(run.usage.promptTokens, 10_000, label);
    assert.ok(Math.abs(run.costUsd - expected) < 1e-12, `${label}: ${run.costUsd} != ${expected}`);
  }
});

test("a chat answer's reasoning and refusal text count in the local estimate of its output when the upstream reports no usage, buffered and streamed", async (t) => {
  const reasoning = Array.from({ length: 200 }, (_, i) => `step${i}`).join(' ');
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (!req.body.stream) {
      const answer = completion('ok') as { choices: Array<{ message: Record<string, unknown> }>; usage?: unknown };
      answer.choices[0]!.message.reasoning_content = reasoning;
      delete answer.usage;
      return sendJson(res, 200, answer);
    }
    // Truncated while the model reasons: no finish_reason, no [DONE], no usage.
    startSse(res);
    res.write(`data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: { role: 'assistant', reasoning_content: reasoning }, finish_reason: null }] })}\n\n`);
    res.write(`data: ${JSON.stringify({ ...contentChunk(''), choices: [{ index: 0, delta: { refusal: 'I cannot help with that.' }, finish_reason: null }] })}\n\n`);
    res.end();
  });
  const { address, app } = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  for (const stream of [false, true]) {
    const answer = await fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: unique('think') }] }),
    });
    await answer.text();
    const { run } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
    assert.equal(run.status, stream ? 'failed' : 'completed');
    assert.ok(run.usage.completionTokens >= 200, `${stream ? 'streamed' : 'buffered'}: ${run.usage.completionTokens} output tokens for 200 words of reasoning`);
  }
});
