/**
 * What a large buffered answer costs svc (docs/providers.md, "Upstream failures and their HTTP answers"): written out
 * as JSON once, the bytes its client is sent being the ones the exact cache stores.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import { completion, startFakeUpstream } from '../support/fake-upstream.ts';
import { openaiGateway } from '../support/openai-gateway.ts';

/** A fake upstream answering every chat request with the same completion of `chars` characters, sent as prepared. */
async function upstreamAnswering(t: TestContext, chars: number) {
  const body = JSON.stringify(completion('x'.repeat(chars)));
  const upstream = await startFakeUpstream(t, (_req, res) => {
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
