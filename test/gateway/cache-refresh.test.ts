/**
 * The exact cache's refresh controls (SPEC 4.2) through the official `openai` client: a refresh replaces the entry
 * with its fresh answer, and a fresh answer the cache cannot keep must not leave the old one to be served.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { completion, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { json } from '../support/build.ts';
import { openaiGateway } from '../support/openai-gateway.ts';

const REFRESHING: Array<Record<string, string>> = [{ 'x-svc-cache-bypass': 'true' }, { 'cache-control': 'no-cache' }, { 'cache-control': 'max-age=0' }];

test('a refresh whose fresh answer cannot be stored drops the old entry: the next plain request goes live, never the answer the client refreshed', async (t) => {
  const upstream = await startFakeUpstream(t);
  const { app, client } = await openaiGateway(t, upstream);
  for (const [index, headers] of REFRESHING.entries()) {
    const body = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: `refresh me ${index}` }] };
    upstream.handle((_req, res) => sendJson(res, 200, completion('the old answer')));
    await client.chat.completions.create(body);
    const hit = await client.chat.completions.create(body).withResponse();
    assert.equal(hit.response.headers.get('x-svc-route'), 'exact_cache', 'primed');

    // The refresh's answer is one the cache refuses (a content filter stopped it).
    const filtered = { ...completion('partial'), choices: [{ index: 0, message: { role: 'assistant', content: 'partial', refusal: null }, finish_reason: 'content_filter', logprobs: null }] };
    upstream.handle((_req, res) => sendJson(res, 200, filtered));
    const refreshed = await client.chat.completions.create(body, { headers }).withResponse();
    assert.equal(refreshed.response.headers.get('x-svc-route'), 'live', JSON.stringify(headers));
    assert.equal(refreshed.data.choices[0]!.finish_reason, 'content_filter');
    const run = json(await app.inject({ url: `/api/v1/runs/${refreshed.response.headers.get('x-svc-run-id')}` }));
    assert.equal(run.run.routeExplanation.cache[0].write, 'not_cacheable');
    assert.ok(run.events.some((event: any) => event.type === 'cache.dropped'));

    upstream.handle((_req, res) => sendJson(res, 200, completion('the new answer')));
    const next = await client.chat.completions.create(body).withResponse();
    assert.equal(next.response.headers.get('x-svc-route'), 'live', `after ${JSON.stringify(headers)}, the refreshed-away answer must not be served`);
    assert.equal(next.data.choices[0]!.message.content, 'the new answer');
  }
});
