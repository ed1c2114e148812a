/**
 * Cost and its `priced` flag as runs record them (docs/gateway.md, "Cost"), through the official client against a
 * listening svc: live runs, exact-cache hits, and the mock (free).
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';

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
