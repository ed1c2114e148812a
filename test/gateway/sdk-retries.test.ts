/**
 * The official clients' retry loops (maxRetries) against svc's failures: it retries what svc answers as
 * retryable (429, 5xx) after the `retry-after` svc sends, and gives up on what it answers as the caller's fault.
 * What a user of the client sees is the error class, code, type and request id of svc's last answer.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { openaiGateway } from '../support/openai-gateway.ts';

test("the client retries the mock's 429 as often as maxRetries says, each attempt its own failed run, and ends with RateLimitError carrying svc's retry-after; a 400 is not retried", async (t) => {
  const { app } = await build(t);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 2, timeout: loadScaled(20_000) });
  const messages = [{ role: 'user' as const, content: 'retry me' }];
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mock-429', messages }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.RateLimitError, String(error));
    assert.equal(error.code, 'rate_limit_exceeded');
    assert.equal(error.type, 'rate_limit_error');
    assert.equal(error.headers.get('retry-after'), '1');
    assert.match(error.requestID ?? '', /^req_/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mock-400', messages }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.BadRequestError, String(error));
    assert.equal(error.code, 'upstream_rejected');
    return true;
  });
  const runs = json(await app.inject({ url: '/api/v1/runs' })).runs;
  const kinds = (model: string) => runs.filter((run: any) => run.model === model).map((run: any) => `${run.status} ${run.error.kind}`);
  assert.deepEqual(kinds('gpt-4o-mock-429'), ['failed rate_limited', 'failed rate_limited', 'failed rate_limited'], 'the first try and two retries');
  assert.equal(kinds('gpt-4o-mock-400').length, 1, 'a refusal is not retried');
});

test("a live upstream's 503 with retry-after, answered as a 502 carrying it, is retried by the client to the upstream's next answer, buffered and streamed", async (t) => {
  let unavailable = true;
  const upstream = await startFakeUpstream(t, (request, res) => {
    if (unavailable) sendJson(res, 503, { error: { message: 'try later', type: 'server_error' } }, { 'retry-after': '1' });
    else if (request.body.stream) sendChunks(res, [contentChunk('back again'), { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]);
    else sendJson(res, 200, completion('back again'));
    unavailable = !unavailable;
  });
  const { client } = await openaiGateway(t, upstream);
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'once' }] }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.InternalServerError, String(error));
    assert.equal(error.status, 502);
    assert.equal(error.code, 'upstream_error');
    assert.equal(error.headers.get('retry-after'), '1');
    return true;
  });
  unavailable = true;
  const retrying = client.withOptions({ maxRetries: 1 });
  const answer = await retrying.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'twice' }] });
  assert.equal(answer.choices[0]!.message.content, 'back again');
  assert.match(answer._request_id ?? '', /^req_/);
  unavailable = true;
  const streamed = await retrying.chat.completions.stream({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'streamed' }] }).finalChatCompletion();
  assert.equal(streamed.choices[0]!.message.content, 'back again');
  assert.equal(upstream.requests.length, 5, 'the failed call, then each call and its retry');
});

test("a live upstream refusing svc's own key is a 502 the clients do not retry (x-should-retry: false): one attempt, one failed run, on the chat and messages wires", async (t) => {
  const chatUpstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } }));
  const { client, app } = await openaiGateway(t, chatUpstream);
  await assert.rejects(client.withOptions({ maxRetries: 2 }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'refused' }] }), (error: unknown) => {
    assert.ok(error instanceof OpenAI.InternalServerError, String(error));
    assert.equal(error.code, 'upstream_error');
    assert.equal(error.headers.get('x-should-retry'), 'false');
    return true;
  });
  assert.equal(chatUpstream.requests.length, 1, 'the client did not retry');
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).runs.length, 1);

  const messagesUpstream = await startFakeUpstream(t, (_request, res) => sendJson(res, 402, { type: 'error', error: { type: 'billing_error', message: 'Your credit balance is too low.' } }));
  const built = await build(t, { env: { MESSAGES_API_KEY: 'sk-messages-upstream', MESSAGES_BASE_URL: messagesUpstream.baseUrl.replace(/\/v1$/, '') } });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const anthropic = new Anthropic({ baseURL: address, apiKey: 'local-dev-key', maxRetries: 2 });
  await assert.rejects(anthropic.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: 'refused' }] }), (error: unknown) => {
    assert.ok(error instanceof Anthropic.InternalServerError, String(error));
    assert.equal(error.status, 502);
    return true;
  });
  assert.equal(messagesUpstream.requests.length, 1, 'the client did not retry');
  assert.equal(json(await built.app.inject({ url: '/api/v1/runs' })).runs.length, 1);
});
