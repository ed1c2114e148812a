/**
 * What a failed attempt costs when svc refused, or could not read, what the upstream answered (docs/gateway.md,
 * "Cost"): the usage the upstream reported with its failure is recorded and priced; an answer the upstream gave
 * (HTTP 200) but svc has no usage for has an unknown cost (`priced: false`), not a firm $0; the upstream's own refusal
 * (an error event before any other, as an HTTP error status) costs nothing. Driven through the official clients
 * against a listening svc whose live providers are fake upstreams.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { contentChunk, sendChunks, sleep, startFakeUpstream, startSse } from '../support/fake-upstream.ts';
import { costOf } from '../../src/gateway/pricing.ts';

async function listening(t: TestContext, env: Record<string, string>) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0 }) };
}

let counter = 0;
const unique = (text: string) => `${text} #${++counter} ${process.hrtime.bigint()}`;

const sse = (events: Array<Record<string, unknown>>) => events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join('');

async function post(address: string, path: string, body: unknown) {
  return fetch(`${address}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function finishedRun(app: Awaited<ReturnType<typeof listening>>['app'], runId: string | null) {
  let detail: any;
  for (let i = 0; i < 200 && (!detail || detail.run.status === 'running'); i++, await sleep(10)) detail = json(await app.inject({ url: `/api/v1/runs/${runId}` }));
  return detail;
}

test('a messages stream refused at its first event: unknown cost when svc could not read it, $0 when it is the upstream\'s error', async (t) => {
  let first: 'malformed' | 'overloaded' = 'malformed';
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.end(
      first === 'malformed'
        ? sse([{ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'before any message_start' } }])
        : sse([{ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]),
    );
  });
  const { address, app } = await listening(t, { MESSAGES_API_KEY: 'sk-messages', MESSAGES_BASE_URL: upstream.baseUrl.replace(/\/v1$/, '') });
  const request = () => ({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, messages: [{ role: 'user', content: unique('hi') }] });

  const malformed = await post(address, '/v1/messages', request());
  assert.equal(malformed.status, 502);
  const unread = await finishedRun(app, malformed.headers.get('x-svc-run-id'));
  assert.equal(unread.run.error.kind, 'bad_response');
  assert.equal(unread.run.costUsd, 0);
  assert.equal(unread.run.priced, false, 'the upstream answered 200: what it billed is unknown, not $0');
  const economics = json(await app.inject({ url: `/api/v1/runs/${unread.run.id}/economics` }));
  assert.equal(economics.priced, false);

  first = 'overloaded';
  const refused = await post(address, '/v1/messages', request());
  assert.equal(refused.status, 502);
  const overloaded = await finishedRun(app, refused.headers.get('x-svc-run-id'));
  assert.equal(overloaded.run.error.kind, 'upstream_error');
  assert.equal(overloaded.run.costUsd, 0);
  assert.equal(overloaded.run.priced, true, 'the upstream refused the call, as with an HTTP error status: nothing billed');
});

test("a responses stream whose first event is a response.failed carrying usage records that usage and its cost", async (t) => {
  const usage = { input_tokens: 1200, output_tokens: 300, total_tokens: 1500 };
  const upstream = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    const response = { id: 'resp_up', object: 'response', created_at: 1700000000, status: 'failed', model: 'gpt-4o-mini', output: [], usage, error: { code: 'server_error', message: 'boom' } };
    res.end(sse([{ type: 'response.failed', sequence_number: 1, response }]));
  });
  const { address, app } = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const answer = await post(address, '/v1/responses', { model: 'gpt-4o-mini', input: unique('fails'), stream: true });
  assert.equal(answer.status, 502);
  const { run, attempts } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
  assert.equal(run.status, 'failed');
  assert.deepEqual(run.usage, { promptTokens: 1200, completionTokens: 300, totalTokens: 1500 });
  const cost = costOf('gpt-4o-mini', { promptTokens: 1200, completionTokens: 300 }, false).usd;
  assert.ok(cost > 0);
  assert.equal(run.costUsd, cost);
  assert.equal(attempts[0].costUsd, cost);
  assert.equal(run.priced, true);
});

test('a chat stream svc could not read before its first event, failed over: the run completes with the cost it knows, flagged unpriced', async (t) => {
  const primary = await startFakeUpstream(t, (_req, res) => {
    startSse(res);
    res.end(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [null] })}\n\ndata: [DONE]\n\n`);
  });
  const secondary = await startFakeUpstream(t, (_req, res) =>
    sendChunks(res, [
      { ...contentChunk('from the fallback'), choices: [{ index: 0, delta: { content: 'from the fallback' }, finish_reason: 'stop' }] },
      { ...contentChunk(''), choices: [], usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 } },
    ]),
  );
  const { client, app } = await listening(t, {
    CHATCOMP_API_KEY: 'sk-upstream',
    CHATCOMP_BASE_URL: primary.baseUrl,
    CHATCOMP_FALLBACK_API_KEY: 'sk-fallback',
    CHATCOMP_FALLBACK_BASE_URL: secondary.baseUrl,
  });
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('fail over') }], stream: true })
    .withResponse();
  for await (const _chunk of stream);
  const { run, attempts } = await finishedRun(app, response.headers.get('x-svc-run-id'));
  assert.equal(run.status, 'completed');
  assert.deepEqual(attempts.map((attempt: any) => [attempt.outcome, attempt.errorKind]), [['failed', 'bad_response'], ['success', null]]);
  assert.equal(run.costUsd, costOf('gpt-4o-mini', { promptTokens: 100, completionTokens: 20 }, false).usd);
  assert.equal(run.priced, false, "the first attempt's cost is unknown, so the run's is a lower bound");
});

test('a buffered answer svc could not read (HTTP 200, not JSON) has an unknown cost, as the same stream has', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"choices": [oops');
  });
  const { address, app } = await listening(t, { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl });
  const answer = await post(address, '/v1/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('x') }] });
  assert.equal(answer.status, 502);
  const { run } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
  assert.equal(run.error.kind, 'bad_response');
  assert.equal(run.priced, false);
});
