/**
 * Long whitespace through the app: every route that counts a prompt's tokens answers at once. With js-tiktoken's merge,
 * quadratic in the length of one whitespace run, 32,000 spaces held the event loop for 70 s and 512 KiB for over five
 * minutes. No clock here: before, these tests ran until test/run.mjs killed the file; each request takes a fraction
 * of a second now.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countTokens } from '../../src/gateway/tokens.ts';
import { bearer, build, json } from '../support/build.ts';

const BOOT = 'bootstrap-token-tokens-http-0001';
const admin = bearer(BOOT);
const RUN = 256 * 1024;

test('ingest/prompt records a prompt of 256 KiB of spaces with its token count', async (t) => {
  const { app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const prompt = `x${' '.repeat(RUN)}y`;
  const response = await app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: admin, payload: { source: 'ext', prompt } });
  assert.equal(response.statusCode, 201);
  const run = json(await app.inject({ url: `/api/v1/runs/${json(response).runId}`, headers: admin })).run;
  assert.equal(run.usage.promptTokens, countTokens(prompt));
  assert.ok(run.usage.promptTokens > RUN / 128, 'the longest whitespace token is 128 spaces');
});

test('messages count_tokens counts 256 KiB of newlines, tabs and ideographic spaces', async (t) => {
  const { app } = await build(t);
  const system = '\t'.repeat(RUN / 4);
  const content = `a${'\n\n\n '.repeat(RUN / 16)}b${'\u3000'.repeat(RUN / 4)}c`;
  const response = await app.inject({
    method: 'POST',
    url: '/v1/messages/count_tokens',
    payload: { model: 'claude-sonnet-4-5', system, messages: [{ role: 'user', content }] },
  });
  assert.equal(response.statusCode, 200);
  assert.ok(json(response).input_tokens > countTokens(system) + countTokens(content), response.body);
});

test('chat completions and responses to the mock count a prompt of 256 KiB of whitespace', async (t) => {
  const { app } = await build(t);
  const prompt = `x${' \u00a0'.repeat(RUN / 2)}y`;
  const chat = await app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    payload: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }] },
  });
  assert.equal(chat.statusCode, 200, chat.body);
  assert.ok(json(chat).usage.prompt_tokens > countTokens(prompt));
  const responses = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: `${prompt}z` } });
  assert.equal(responses.statusCode, 200, responses.body);
  assert.ok(json(responses).usage.input_tokens > countTokens(prompt));
});
