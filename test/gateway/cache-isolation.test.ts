/**
 * The exact cache's scope through the official `openai` client (docs/gateway.md "Exact-response cache"): a hit
 * never crosses an organization, an app or a subject; stats and invalidation stay within the caller's organization;
 * a hit is replayed on the other transport (streamed / buffered) and records no cost but its savings.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import OpenAI from 'openai';
import type { FastifyInstance } from 'fastify';
import { bearer, json } from '../support/build.ts';
import { BOOT, buildWithAdmin, operator } from '../support/accounts.ts';
import { completion, contentChunk, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';

async function keyIn(app: FastifyInstance, orgId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const response = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k', admin: true, ...extra } });
  assert.equal(response.statusCode, 201, response.body);
  return json(response).token;
}

test('two organizations sending the same request never share a cached answer; stats and invalidation are per organization', async (t) => {
  const upstream = await startFakeUpstream(t);
  let answered = 0;
  upstream.handle((req, res) => {
    const text = `answer ${++answered}`;
    if (req.body.stream) sendChunks(res, [contentChunk(text), { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]);
    else sendJson(res, 200, completion(text));
  });
  const { app } = await buildWithAdmin(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const acme = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Acme', ownerEmail: 'root@example.test' } })).org.id;
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const clientOf = (apiKey: string, headers: Record<string, string> = {}) =>
    new OpenAI({ baseURL: `${address}/v1`, apiKey, maxRetries: 0, timeout: loadScaled(20_000), defaultHeaders: headers });
  const ofDefault = await keyIn(app, 'default');
  const ofAcme = await keyIn(app, acme);
  const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'same question, two orgs' }] };

  const first = await clientOf(ofDefault).chat.completions.create(body).withResponse();
  assert.equal(first.response.headers.get('x-svc-route'), 'live');
  assert.equal((await clientOf(ofDefault).chat.completions.create(body).withResponse()).response.headers.get('x-svc-route'), 'exact_cache');
  const other = await clientOf(ofAcme).chat.completions.create(body).withResponse();
  assert.equal(other.response.headers.get('x-svc-route'), 'live', 'another organization is never served the first one\'s answer');
  assert.equal(other.data.choices[0]!.message.content, 'answer 2');
  // Streamed, too.
  const streamed = await clientOf(ofAcme, { 'x-svc-app': 'other-app' }).chat.completions.create({ ...body, stream: true }).withResponse();
  assert.equal(streamed.response.headers.get('x-svc-route'), 'live');
  for await (const _chunk of streamed.data) void _chunk;

  const statsOf = async (token: string) => json(await app.inject({ url: '/api/v1/cache/stats', headers: bearer(token) })).stats.find((row: any) => row.cacheType === 'exact_response');
  assert.deepEqual(await statsOf(ofDefault), { cacheType: 'exact_response', entries: 1, hits: 1 });
  assert.deepEqual(await statsOf(ofAcme), { cacheType: 'exact_response', entries: 2, hits: 0 });

  const invalidated = await app.inject({ method: 'POST', url: '/api/v1/cache/invalidate', headers: bearer(ofAcme), payload: { all: true } });
  assert.equal(invalidated.statusCode, 200, invalidated.body);
  assert.equal(json(invalidated).invalidated, 2);
  assert.equal((await clientOf(ofDefault).chat.completions.create(body).withResponse()).response.headers.get('x-svc-route'), 'exact_cache', "another organization's invalidation leaves this one's entries");
  assert.equal((await clientOf(ofAcme).chat.completions.create(body).withResponse()).response.headers.get('x-svc-route'), 'live');
});

test('a streamed answer is served to a buffered request and a buffered one to a streamed request; a hit costs nothing and records the saving', async (t) => {
  const upstream = await startFakeUpstream(t);
  upstream.handle((req, res) => {
    if (req.body.stream) {
      sendChunks(res, [
        contentChunk('streamed first'),
        { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
        { ...contentChunk(''), choices: [], usage: { prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 } },
      ]);
    } else sendJson(res, 200, { ...completion('buffered first'), usage: { prompt_tokens: 2000, completion_tokens: 100, total_tokens: 2100 } });
  });
  const { app } = await buildWithAdmin(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ baseURL: `${address}/v1`, apiKey: BOOT, maxRetries: 0, timeout: loadScaled(20_000) });
  const runOf = async (id: string | null) => json(await app.inject({ url: `/api/v1/runs/${id}`, headers: bearer(BOOT) })).run;

  const streamedBody = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'streamed first' }] };
  const live = await client.chat.completions.create({ ...streamedBody, stream: true, stream_options: { include_usage: true } }).withResponse();
  let text = '';
  for await (const chunk of live.data) text += chunk.choices[0]?.delta.content ?? '';
  assert.equal(text, 'streamed first');
  const liveRun = await runOf(live.response.headers.get('x-svc-run-id'));
  assert.ok(liveRun.costUsd > 0);
  const hit = await client.chat.completions.create(streamedBody).withResponse();
  assert.equal(hit.response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(hit.data.choices[0]!.message.content, 'streamed first');
  assert.equal(hit.data.choices[0]!.finish_reason, 'stop');
  assert.deepEqual([hit.data.usage?.prompt_tokens, hit.data.usage?.completion_tokens], [1000, 500]);
  const hitRun = await runOf(hit.response.headers.get('x-svc-run-id'));
  assert.equal(hitRun.costUsd, 0);
  assert.equal(hitRun.savedUsd, liveRun.costUsd);

  const bufferedBody = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'buffered first' }] };
  const first = await client.chat.completions.create(bufferedBody).withResponse();
  const bufferedRun = await runOf(first.response.headers.get('x-svc-run-id'));
  const replay = await client.chat.completions.create({ ...bufferedBody, stream: true, stream_options: { include_usage: true } }).withResponse();
  assert.equal(replay.response.headers.get('x-svc-route'), 'exact_cache');
  let replayed = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  let finish: string | null = null;
  for await (const chunk of replay.data) {
    replayed += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  assert.equal(replayed, 'buffered first');
  assert.equal(finish, 'stop');
  assert.deepEqual([usage?.prompt_tokens, usage?.completion_tokens], [2000, 100]);
  const replayRun = await runOf(replay.response.headers.get('x-svc-run-id'));
  assert.equal(replayRun.costUsd, 0);
  assert.equal(replayRun.savedUsd, bufferedRun.costUsd);
  const savings = json(await app.inject({ url: '/api/v1/savings', headers: bearer(BOOT) }));
  assert.ok(Math.abs(savings.totalSavedUsd - (liveRun.costUsd + bufferedRun.costUsd)) < 1e-9, JSON.stringify(savings));
  assert.ok(Math.abs(savings.totalCostUsd - (liveRun.costUsd + bufferedRun.costUsd)) < 1e-9, JSON.stringify(savings));
});
