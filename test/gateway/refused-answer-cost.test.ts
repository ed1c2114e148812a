/**
 * What a failed attempt costs when svc refused, or could not read, what the upstream answered (docs/gateway.md,
 * "Cost"): the usage the upstream reported with its failure is recorded and priced; an answer the upstream gave
 * (HTTP 200) but svc has no usage for has an unknown cost (`priced: false`), not a firm $0; the upstream's own refusal
 * (an error event before any other, as an HTTP error status) costs nothing. So is a call that broke on the wire: one
 * whose request reached the upstream (it timed out, its connection broke, its client left) has an unknown cost, one
 * that never did (the connection was refused) a firm $0. Driven through the official clients and fetch against a
 * listening svc whose live providers are fake upstreams.
 */
import assert from 'node:assert/strict';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { build, json } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, sleep, startFakeUpstream, startSse, type UpstreamHandler } from '../support/fake-upstream.ts';
import { finishedRun } from '../support/finished-runs.ts';
import { costOf } from '../../src/gateway/pricing.ts';

async function listening(t: TestContext, env: Record<string, string>) {
  const built = await build(t, { env });
  const address = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, address, client: new OpenAI({ baseURL: `${address}/v1`, apiKey: 'sk-local-dev', maxRetries: 0 }) };
}

let counter = 0;
const unique = (text: string) => `${text} #${++counter} ${process.hrtime.bigint()}`;

const sse = (events: Array<Record<string, unknown>>) => events.map((event) => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`).join('');

async function post(address: string, path: string, body: unknown, signal?: AbortSignal) {
  return fetch(`${address}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
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
  assert.equal(refused.status, 529);
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

/** The gateway wires whose calls record a run, each with a request of a model the live upstream serves. */
const WIRES = [
  { path: '/v1/chat/completions', body: () => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: unique('hi') }] }) },
  { path: '/v1/responses', body: () => ({ model: 'gpt-4o-mini', input: unique('hi') }) },
  { path: '/v1/messages', body: () => ({ model: 'claude-sonnet-4-5', max_tokens: 64, messages: [{ role: 'user', content: unique('hi') }] }) },
];

/** A live gateway whose every wire's upstream is `upstreamBaseUrl` (`http://host:port/v1`). */
function liveEnv(upstreamBaseUrl: string, env: Record<string, string> = {}): Record<string, string> {
  return { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstreamBaseUrl, MESSAGES_API_KEY: 'sk-messages', MESSAGES_BASE_URL: upstreamBaseUrl.replace(/\/v1$/, ''), ...env };
}

/** An upstream that read the request and never answers (the gateway's deadline ends the call). */
const stalls: UpstreamHandler = () => undefined;
/** An upstream that read the request and drops the connection without answering. */
const drops: UpstreamHandler = (_req, res) => {
  res.socket!.destroy();
};
/** An upstream that answers 200 and drops the connection halfway through the body. */
const dropsMidBody: UpstreamHandler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
  res.write('{"id": "cut', () => res.socket!.destroy());
};

/** Nothing listens on the discard port: a connection there is refused before any request is written. */
const REFUSING_UPSTREAM = 'http://127.0.0.1:9/v1';

async function economicsOf(app: Awaited<ReturnType<typeof listening>>['app'], runId: string) {
  return json(await app.inject({ url: `/api/v1/runs/${runId}/economics` }));
}

test('a call that timed out or broke after its request reached the upstream has an unknown cost, on every wire, buffered or streamed', async (t) => {
  let broken: UpstreamHandler = stalls;
  const upstream = await startFakeUpstream(t, (req, res) => broken(req, res));
  // Deadlines long enough for a loaded machine to connect and write first: a deadline passed before the write is a firm $0.
  const { address, app } = await listening(t, liveEnv(upstream.baseUrl, { SVC_PROVIDER_TIMEOUT_MS: '1000', SVC_PROVIDER_STREAM_HEADERS_TIMEOUT_MS: '1000' }));
  const cases = [
    { how: 'stalls', handler: stalls, status: 504, kind: 'timeout', streams: true },
    { how: 'drops the connection', handler: drops, status: 502, kind: 'network', streams: true },
    { how: 'drops the connection mid-body', handler: dropsMidBody, status: 502, kind: 'network', streams: false },
  ];
  for (const each of cases) {
    broken = each.handler;
    for (const wire of WIRES) {
      for (const stream of each.streams ? [false, true] : [false]) {
        const label = `${wire.path}${stream ? ' (stream)' : ''}: the upstream ${each.how}`;
        const asked = upstream.requests.length;
        const answer = await post(address, wire.path, { ...wire.body(), ...(stream ? { stream: true } : {}) });
        assert.equal(answer.status, each.status, label);
        assert.equal(upstream.requests.length, asked + 1, `${label}: the request reached the upstream`);
        const { run, events } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
        assert.equal(run.error.kind, each.kind, label);
        assert.equal(run.costUsd, 0, label);
        assert.equal(run.priced, false, `${label}: the upstream may have run and billed it; what it cost is unknown, not $0`);
        const failed = events.find((event: any) => event.type === 'provider.failed');
        assert.equal(failed.payload.costUnknown, true, label);
        const economics = await economicsOf(app, run.id);
        assert.equal(economics.priced, false, label);
        assert.equal(economics.cost.providerUsd, 0, label);
      }
    }
  }
});

test('a call whose connection was refused never reached the upstream: a firm $0, on every wire', async (t) => {
  const { address, app } = await listening(t, liveEnv(REFUSING_UPSTREAM));
  for (const wire of WIRES) {
    for (const stream of [false, true]) {
      const label = `${wire.path}${stream ? ' (stream)' : ''}`;
      const answer = await post(address, wire.path, { ...wire.body(), ...(stream ? { stream: true } : {}) });
      assert.equal(answer.status, 502, label);
      const { run, events } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
      assert.equal(run.error.kind, 'network', label);
      assert.equal(run.costUsd, 0, label);
      assert.equal(run.priced, true, `${label}: nothing was sent, so nothing was billed`);
      assert.equal(events.find((event: any) => event.type === 'provider.failed').payload.costUnknown, undefined, label);
      assert.equal((await economicsOf(app, run.id)).priced, true, label);
    }
  }
});

test("a buffered call its client left after the request reached the upstream has an unknown cost", async (t) => {
  const upstream = await startFakeUpstream(t, stalls);
  const { address, app } = await listening(t, liveEnv(upstream.baseUrl));
  const client = new AbortController();
  const answer = post(address, '/v1/chat/completions', WIRES[0]!.body(), client.signal);
  while (upstream.requests.length === 0) await sleep(10);
  client.abort();
  await assert.rejects(answer);
  await upstream.clientClosed();
  const runs = json(await app.inject({ url: '/api/v1/runs' })).runs;
  const { run } = await finishedRun(app, runs[0].id);
  assert.equal(run.error.kind, 'aborted');
  assert.equal(run.priced, false);
});

test("failover after a call that broke on the wire: the run's cost is the fallback's, a lower bound when the first call had reached its upstream", async (t) => {
  const fallback = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('from the fallback')));
  const served = costOf('gpt-4o-mini', { promptTokens: 5, completionTokens: 2 }, false).usd;
  const dropping = await startFakeUpstream(t, drops);
  for (const [primary, priced] of [
    [dropping.baseUrl, false],
    [REFUSING_UPSTREAM, true],
  ] as const) {
    const { address, app } = await listening(t, liveEnv(primary, { CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl }));
    const answer = await post(address, '/v1/chat/completions', WIRES[0]!.body());
    assert.equal(answer.status, 200, primary);
    const { run, attempts } = await finishedRun(app, answer.headers.get('x-svc-run-id'));
    assert.equal(run.status, 'completed', primary);
    assert.deepEqual(attempts.map((attempt: any) => [attempt.outcome, attempt.errorKind, attempt.costUsd]), [['failed', 'network', 0], ['success', null, served]], primary);
    assert.equal(run.costUsd, served, primary);
    assert.equal(run.priced, priced, primary);
    const economics = await economicsOf(app, run.id);
    assert.equal(economics.priced, priced, primary);
    assert.equal(economics.cost.providerUsd, served, primary);
  }
});
