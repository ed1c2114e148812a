/**
 * The governed route `svc/chorus` (SPEC 4.3) through the chat-completions, messages, responses and embeddings wires with live
 * upstreams configured. svc does not build the route yet (docs/gateway.md), so it honours none of its governance
 * fields; what it must not do is send the request on to a remote provider as if `svc/chorus` were that provider's
 * model, with `local_only`, `blocked_providers` and the customer's `chorus` metadata riding along as unknown fields.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

const GOVERNANCE = {
  local_only: true,
  blocked_providers: ['chatcomp', 'chatcomp-fallback'],
  allowed_model_classes: ['local'],
  budget_limit_usd: 0,
  receipt_mode: 'full',
  chorus: { ticket: 'T-1' },
};

test('svc/chorus with live upstreams is 400 unsupported_model and reaches no upstream, through failover too', async (t) => {
  // The platform upstream fails (a 503 the registry fails over on); the fallback would answer.
  const platform = await startFakeUpstream(t, (_req, res) => sendJson(res, 503, { error: { message: 'overloaded' } }));
  const fallback = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('from the fallback')));
  const messages = await startFakeUpstream(t, (_req, res) => sendJson(res, 500, { type: 'error', error: { type: 'api_error', message: 'unexpected' } }));
  const { app } = await build(t, {
    env: {
      CHATCOMP_API_KEY: 'sk-platform',
      CHATCOMP_BASE_URL: platform.baseUrl,
      CHATCOMP_FALLBACK_API_KEY: 'sk-fallback',
      CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl,
      MESSAGES_API_KEY: 'sk-messages',
      MESSAGES_BASE_URL: messages.baseUrl.replace(/\/v1$/, ''),
    },
  });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0, timeout: loadScaled(20_000) });

  for (const model of ['svc/chorus', 'SVC/Chorus']) {
    const error = await client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'the patient record' }], ...GOVERNANCE } as never)
      .then(() => null, (e: unknown) => e);
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.code, 'unsupported_model');
    assert.equal(error.param, 'model');
    assert.match(error.message, /svc\/chorus.*not built.*nothing was sent/i);
  }
  const streamed = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: { model: 'svc/chorus', stream: true, messages: [{ role: 'user', content: 'the patient record' }], ...GOVERNANCE },
  });
  assert.equal(streamed.statusCode, 400);
  assert.equal(json(streamed).error.code, 'unsupported_model');
  const responses = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'svc/chorus', input: 'the patient record', ...GOVERNANCE } });
  assert.equal(responses.statusCode, 400);
  assert.equal(json(responses).error.code, 'unsupported_model');
  const anthropic = await app.inject({
    method: 'POST',
    url: '/v1/messages',
    payload: { model: 'svc/chorus', max_tokens: 64, messages: [{ role: 'user', content: 'the patient record' }], ...GOVERNANCE },
  });
  assert.equal(anthropic.statusCode, 400);
  assert.equal(json(anthropic).error.type, 'invalid_request_error');
  assert.match(json(anthropic).error.message, /not built/);
  const embeddings = await app.inject({ method: 'POST', url: '/v1/embeddings', payload: { model: 'svc/chorus', input: 'the patient record' } });
  assert.equal(embeddings.statusCode, 400);
  assert.equal(json(embeddings).error.code, 'unsupported_model');

  assert.deepEqual([platform.requests.length, fallback.requests.length, messages.requests.length], [0, 0, 0]);
  // A refusal before routing records no run.
  assert.equal(json(await app.inject({ method: 'GET', url: '/api/v1/runs' })).runs.length, 0);
  // Other models are served as before.
  const served = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
  assert.equal(served.choices[0]!.message.content, 'from the fallback');
});

test('svc/chorus with no live upstream is answered by the mock, which sends nothing anywhere, and issues no receipt', async (t) => {
  const { app } = await build(t);
  const response = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: { model: 'svc/chorus', messages: [{ role: 'user', content: 'the patient record' }], ...GOVERNANCE },
  });
  assert.equal(response.statusCode, 200);
  const runId = response.headers['x-svc-run-id'];
  const receipt = await app.inject({ method: 'GET', url: `/api/v1/runs/${runId}/receipt` });
  assert.equal(receipt.statusCode, 404);
  assert.match(json(receipt).error.message, /no receipt/);
  const packet = await app.inject({ method: 'GET', url: `/api/v1/runs/${runId}/evidence-packet` });
  assert.equal(json(packet).chorus, null);
});
