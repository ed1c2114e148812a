/**
 * An upstream that refuses a key often quotes part of it back ("Incorrect API key provided: gsk_Zq8R...."). Only a
 * key shaped like `sk-...` was masked in part; the start of any other (a `gsk_` key, an Azure key) went on to the
 * client, the run's error and the log (docs/providers.md, "Upstream failures and their HTTP answers").
 */
import assert from 'node:assert/strict';
import test, { before } from 'node:test';
import OpenAI from 'openai';
import { sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { ensureBundle, startServe, tempDir } from '../support/process.ts';

before(ensureBundle);

const KEY = 'gsk_Zq8RkLm2Vt6Wx4Yp0Nb7Hc3Jd9Fg';
/** What the upstream quotes: the key's first 16 characters, its last 4. */
const QUOTED = [KEY.slice(0, 16), KEY.slice(-4)] as const;

test("svc serve: a provider key's part an upstream quotes reaches neither the client, nor the run's error, nor the log", async (t) => {
  const upstream = await startFakeUpstream(t, (request, res) => {
    // The prompt says which status to answer: a 400 is relayed to the client, a 401 (svc's own account) is logged.
    const status = JSON.stringify(request.body).includes('as 401') ? 401 : 400;
    sendJson(res, status, { error: { message: `Incorrect API key provided: ${QUOTED[0]}************${QUOTED[1]}.`, type: 'invalid_request_error', code: 'invalid_api_key' } });
  });
  const server = await startServe(t, tempDir(t), { SVC_LOG_LEVEL: 'info', CHATCOMP_API_KEY: KEY, CHATCOMP_BASE_URL: upstream.baseUrl });
  const client = new OpenAI({ baseURL: `${server.address}/v1`, apiKey: 'unused', maxRetries: 0 });

  const relayed = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'answer as 400' }] }).catch((error: unknown) => error);
  assert.ok(relayed instanceof OpenAI.BadRequestError);
  assert.match(relayed.message, /Incorrect API key provided: \[redacted\]/);
  assert.ok(!relayed.message.includes(QUOTED[0]), relayed.message);
  const logged = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'answer as 401' }] }).catch((error: unknown) => error);
  assert.ok(logged instanceof OpenAI.InternalServerError);

  const runs = (await (await fetch(`${server.address}/api/v1/runs?limit=10`)).json()) as { runs: Array<{ id: string }> };
  assert.equal(runs.runs.length, 2);
  for (const run of runs.runs) {
    const detail = await (await fetch(`${server.address}/api/v1/runs/${run.id}`)).text();
    assert.match(detail, /Incorrect API key provided: \[redacted\]/);
    assert.ok(!detail.includes(QUOTED[0]), detail);
  }
  // The 502's 'request failed' line, once svc has written it (the log is written asynchronously).
  while (!server.output().includes('"request failed"')) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(!server.output().includes(QUOTED[0]), server.output());
});
