/**
 * The headers of a gateway refusal (docs/gateway.md, Headers): one after the run started (the mock's upstream_rejected)
 * carries the run's x-svc-run-id, x-svc-route and x-svc-run-url as an answer does; one before any run carries none.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { build } from '../support/build.ts';

const AUTH = { authorization: 'Bearer sk-local-dev' };
const ASK = [{ role: 'user', content: 'hi' }];

const afterRun = [
  { url: '/v1/chat/completions', payload: { model: 'gpt-4o-mini', messages: ASK, web_search_options: {} } },
  { url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'hi', include: ['message.output_text.logprobs'] } },
  { url: '/v1/messages', payload: { model: 'claude-sonnet-4-5', max_tokens: 16, messages: ASK, container: 'container_1' } },
];

test('a refusal after the run started carries the run\'s x-svc-run-url beside its id and route, buffered and streamed, on every wire', async (t) => {
  const { app } = await build(t, { env: { SVC_APP_BASE_URL: 'https://svc.example' } });
  for (const { url, payload } of afterRun) {
    for (const stream of [false, true]) {
      const refused = await app.inject({ method: 'POST', url, headers: AUTH, payload: { ...payload, stream } });
      const where = `${url} (stream: ${stream})`;
      assert.equal(refused.statusCode, 400, `${where}: ${refused.body}`);
      assert.match(String(refused.headers['content-type']), /^application\/json/, where);
      assert.equal(refused.headers['cache-control'], 'no-store', where);
      const runId = String(refused.headers['x-svc-run-id']);
      assert.match(runId, /^run_/, where);
      assert.equal(refused.headers['x-svc-route'], 'live', where);
      assert.equal(refused.headers['x-svc-run-url'], `https://svc.example/runs/${runId}`, where);
    }
  }
});

test('a refusal before any run carries no run headers', async (t) => {
  const { app } = await build(t, { env: { SVC_APP_BASE_URL: 'https://svc.example' } });
  const refused = await app.inject({ method: 'POST', url: '/v1/responses', headers: AUTH, payload: { model: 'gpt-4o-mini', input: 'hi', include: ['nope'] } });
  assert.equal(refused.statusCode, 400);
  for (const name of ['x-svc-run-id', 'x-svc-route', 'x-svc-run-url']) assert.equal(refused.headers[name], undefined, name);
});
