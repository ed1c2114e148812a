/**
 * What a large answer costs svc (docs/providers.md, "Upstream failures and their HTTP answers"): written out as JSON
 * once, the bytes its client is sent being the ones the exact cache stores; and one whose JSON is past
 * SVC_CACHE_MAX_ENTRY_BYTES relayed but not stored (docs/gateway.md, "What is stored").
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { json } from '../support/build.ts';
import { completion, contentChunk, sendChunks, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';

/** A fake upstream answering every chat request with the same completion of `chars` characters, sent as prepared. */
async function upstreamAnswering(t: TestContext, chars: number) {
  const body = JSON.stringify(completion('x'.repeat(chars)));
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (req.body.stream) {
      // The same answer streamed, in chunks of 8 KiB.
      const pieces = Array.from({ length: Math.ceil(chars / 8192) }, (_, i) => contentChunk('x'.repeat(Math.min(8192, chars - i * 8192))));
      const usage = { ...contentChunk(''), choices: [], usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } };
      return sendChunks(res, [...pieces, { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }, usage]);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  return { upstream, bytes: Buffer.byteLength(body) };
}

/** Counts the JSON texts written while it is installed that are at least `minChars` long. */
function countJsonWrites(t: TestContext, minChars: number): { count: number } {
  const counted = { count: 0 };
  const original = JSON.stringify;
  JSON.stringify = function (this: JSON, ...args: Parameters<typeof JSON.stringify>) {
    const text = original.apply(this, args);
    if (typeof text === 'string' && text.length >= minChars) counted.count += 1;
    return text;
  } as typeof JSON.stringify;
  t.after(() => void (JSON.stringify = original));
  return counted;
}

test('a buffered answer is written out as JSON once, for its client and for the exact cache', async (t) => {
  const { upstream, bytes } = await upstreamAnswering(t, 1024 * 1024);
  const { client, services } = await openaiGateway(t, upstream);
  const writes = countJsonWrites(t, bytes - 1024);
  const params = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'a long answer' }] };

  const live = await client.chat.completions.create(params).withResponse();
  assert.equal(live.response.headers.get('x-svc-route'), 'live');
  assert.equal(live.data.choices[0]!.message.content!.length, 1024 * 1024);
  // The cache's row is written with the run's group commit.
  await services.ledger.committed();
  assert.equal(writes.count, 1, 'the answer was written out as JSON more than once');

  const hit = await client.chat.completions.create(params).withResponse();
  assert.equal(hit.response.headers.get('x-svc-route'), 'exact_cache');
  assert.equal(hit.data.choices[0]!.message.content, live.data.choices[0]!.message.content);
  assert.equal(upstream.requests.length, 1);
});

test('an answer whose JSON is past SVC_CACHE_MAX_ENTRY_BYTES is relayed, not stored, and its run says why; a smaller one is stored', async (t) => {
  const bound = 64 * 1024;
  for (const stream of [false, true]) {
    for (const [chars, stored] of [[bound + 1024, false], [bound - 2048, true]] as const) {
      const { upstream } = await upstreamAnswering(t, chars);
      const { app, client } = await openaiGateway(t, upstream, { SVC_CACHE_MAX_ENTRY_BYTES: String(bound) });
      const ask = async () => {
        const params = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: `${chars} characters` }] };
        if (!stream) {
          const { data, response } = await client.chat.completions.create(params).withResponse();
          return { content: data.choices[0]!.message.content!, route: response.headers.get('x-svc-route'), runId: response.headers.get('x-svc-run-id') };
        }
        const { data, response } = await client.chat.completions.create({ ...params, stream: true }).withResponse();
        let content = '';
        for await (const chunk of data) content += chunk.choices[0]?.delta.content ?? '';
        return { content, route: response.headers.get('x-svc-route'), runId: response.headers.get('x-svc-run-id') };
      };
      const what = `${stream ? 'streamed' : 'buffered'}, ${chars} characters`;

      const first = await ask();
      assert.equal(first.content.length, chars, what);
      const run = json(await app.inject({ url: `/api/v1/runs/${first.runId}` })).run;
      const second = await ask();
      assert.equal(second.content, first.content, what);
      if (stored) {
        assert.equal(run.routeExplanation.cache[0].write, 'stored', what);
        assert.equal(second.route, 'exact_cache', what);
        assert.equal(upstream.requests.length, 1, what);
        continue;
      }
      assert.equal(run.routeExplanation.cache[0].write, 'not_cacheable', what);
      assert.match(run.routeExplanation.cache[0].reason, /^the answer is \d+ bytes as JSON, more than the 65536 the exact cache stores \(SVC_CACHE_MAX_ENTRY_BYTES\)$/, what);
      assert.equal(second.route, 'live', what);
      assert.equal(upstream.requests.length, 2, `${what}: the second request reaches the upstream`);
    }
  }
});
