/**
 * The responses wire's upstream-stateful fields through the official `openai` client (docs/gateway.md, "Not cached: a
 * request whose answer depends on state the upstream holds"): with a live upstream, `previous_response_id` and
 * `conversation` are relayed to it as sent, buffered and streamed, never served from nor stored into the exact cache,
 * never failed over to another account's key, and recorded as runs naming the field; with the mock they are a 400
 * before any run. The fake upstream keeps responses per API key, as an upstream account does.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import test, { type TestContext } from 'node:test';
import OpenAI from 'openai';
import { bearer, build, json } from '../support/build.ts';
import { BOOT, buildWithAdmin, operator } from '../support/accounts.ts';
import { sendJson, startFakeUpstream, startSse, type FakeUpstream, type RecordedRequest } from '../support/fake-upstream.ts';
import { finishedRun } from '../support/finished-runs.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { validateAgainst } from '../support/openapi.ts';
import { responseToEvents } from '../../src/gateway/wire-replay.ts';
import type { ResponseObject } from '../../src/gateway/providers/types.ts';

const PLATFORM_KEY = 'sk-platform-account';
const FALLBACK_KEY = 'sk-fallback-account';

/**
 * An upstream answering like the Responses API: each answer a new `resp_` id, kept for its key's account unless
 * `store: false`; a `previous_response_id` its account does not hold is its 404; `failing` names a key it answers 500.
 */
async function responsesUpstream(t: TestContext) {
  const held = new Map<string, Set<string>>();
  const state: { failing: string | null } = { failing: null };
  let made = 0;
  const upstream = await startFakeUpstream(t, (request: RecordedRequest, res: ServerResponse) => {
    const account = String(request.headers.authorization);
    const body = request.body as Record<string, any>;
    if (account === `Bearer ${state.failing}`) return sendJson(res, 500, { error: { message: 'The server had an error.', type: 'server_error', param: null, code: null } });
    const kept = held.get(account) ?? new Set<string>();
    held.set(account, kept);
    if (body.previous_response_id !== undefined && !kept.has(body.previous_response_id)) {
      const message = `Previous response with id '${body.previous_response_id}' not found.`;
      return sendJson(res, 404, { error: { message, type: 'invalid_request_error', param: 'previous_response_id', code: 'previous_response_not_found' } });
    }
    made += 1;
    const id = `resp_up_${made}`;
    if (body.store !== false) kept.add(id);
    const text = `answer ${made} after ${body.previous_response_id ?? 'nothing'}`;
    const conversation = body.conversation === undefined ? null : { id: typeof body.conversation === 'string' ? body.conversation : body.conversation.id };
    const response = {
      id,
      object: 'response',
      created_at: 1700000000,
      status: 'completed',
      model: body.model,
      output: [{ id: `msg_up_${made}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
      previous_response_id: body.previous_response_id ?? null,
      conversation,
      store: body.store !== false,
      usage: { input_tokens: 10, output_tokens: 4, total_tokens: 14, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    } as ResponseObject;
    if (!body.stream) return sendJson(res, 200, response);
    startSse(res);
    for (const event of responseToEvents(response)) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    res.end();
  });
  return { upstream, state };
}

async function listening(t: TestContext, app: Awaited<ReturnType<typeof build>>['app'], apiKey = 'sk-local-dev') {
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const clientOf = (key: string) => new OpenAI({ baseURL: `${address}/v1`, apiKey: key, maxRetries: 0, timeout: loadScaled(20_000) });
  return { client: clientOf(apiKey), clientOf };
}

const sentSince = (upstream: FakeUpstream, from: number) => upstream.requests.slice(from);

test('previous_response_id with a live upstream: relayed as sent, buffered and streamed, an identical request reaching the upstream each time, recorded as a run naming it (it was a 400, svc keeping no response state)', async (t) => {
  const { upstream } = await responsesUpstream(t);
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: PLATFORM_KEY, CHATCOMP_BASE_URL: upstream.baseUrl } });
  const { client } = await listening(t, app);

  const first = await client.responses.create({ model: 'gpt-4o-mini', input: 'My name is Ada.' });
  assert.equal(first.id, 'resp_up_1');
  const next = { model: 'gpt-4o-mini', input: 'What is my name?', previous_response_id: first.id };

  // Buffered, twice: the same request, both relayed (the answer depends on what the upstream holds).
  const from = upstream.requests.length;
  const a = await client.responses.create(next).withResponse();
  const b = await client.responses.create(next).withResponse();
  assert.equal(a.data.output_text, 'answer 2 after resp_up_1');
  assert.equal(b.data.output_text, 'answer 3 after resp_up_1');
  assert.equal(b.response.headers.get('x-svc-route'), 'live');
  const relayed = sentSince(upstream, from);
  assert.equal(relayed.length, 2);
  for (const request of relayed) {
    assert.deepEqual(request.body, next);
    assert.equal(request.headers.authorization, `Bearer ${PLATFORM_KEY}`);
    assert.equal(validateAgainst('CreateResponse', request.body), null);
  }

  // Streamed, twice.
  const streamedFrom = upstream.requests.length;
  for (const expected of ['answer 4 after resp_up_1', 'answer 5 after resp_up_1']) {
    const stream = client.responses.stream(next);
    const final = await stream.finalResponse();
    assert.deepEqual(final.output.flatMap((item) => (item.type === 'message' ? item.content.map((part) => (part.type === 'output_text' ? part.text : '')) : [])), [expected]);
    assert.equal(final.previous_response_id, 'resp_up_1');
  }
  const streamed = sentSince(upstream, streamedFrom);
  assert.deepEqual(
    streamed.map((request) => request.body),
    [
      { ...next, stream: true },
      { ...next, stream: true },
    ],
  );

  // The run: live, nothing looked up or stored, the field named in its trace and route, the request as sent kept.
  const runId = b.response.headers.get('x-svc-run-id');
  const detail = await finishedRun(app, runId);
  assert.equal(detail.run.status, 'completed');
  assert.equal(detail.run.provider, 'chatcomp');
  const [decision] = detail.run.routeExplanation.cache;
  assert.equal(decision.lookup, 'not_applicable');
  assert.equal(decision.write, 'not_cacheable');
  assert.ok(
    detail.events.some((event: any) => event.type === 'cache.skipped' && event.payload?.upstreamState === 'previous_response_id'),
    JSON.stringify(detail.events.map((event: any) => [event.type, event.payload])),
  );
  assert.ok(detail.run.routeExplanation.rejectedAlternatives.some((alternative: any) => alternative.reason.includes('previous_response_id')));
  const bundle = json(await app.inject({ url: `/api/v1/runs/${runId}/replay-bundle` }));
  assert.equal(JSON.stringify(bundle).includes('"previous_response_id":"resp_up_1"'), true, 'the request as sent is recorded');
  const stats = json(await app.inject({ url: '/api/v1/cache/stats' })).stats.find((row: any) => row.cacheType === 'exact_response');
  assert.equal(stats?.entries ?? 0, 1, 'only the first turn, which named no upstream state, was stored');
});

test('conversation with a live upstream, as an id or an object: relayed as sent and never cached, buffered and streamed', async (t) => {
  const { upstream } = await responsesUpstream(t);
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: PLATFORM_KEY, CHATCOMP_BASE_URL: upstream.baseUrl } });
  const { client } = await listening(t, app);
  for (const conversation of ['conv_1', { id: 'conv_1' }]) {
    const request = { model: 'gpt-4o-mini', input: 'And then?', conversation };
    const from = upstream.requests.length;
    const buffered = await client.responses.create(request);
    assert.deepEqual(buffered.conversation, { id: 'conv_1' });
    await client.responses.create(request);
    await client.responses.stream(request).finalResponse();
    assert.deepEqual(
      sentSince(upstream, from).map((sent) => sent.body),
      [request, request, { ...request, stream: true }],
    );
  }
});

test('a request naming upstream state stays with the key whose account holds it: the platform key failing is its error, not the fallback key, and an id the platform account does not hold is its 404 previous_response_not_found', async (t) => {
  const { upstream, state } = await responsesUpstream(t);
  const { app } = await build(t, { env: { CHATCOMP_API_KEY: PLATFORM_KEY, CHATCOMP_BASE_URL: upstream.baseUrl, CHATCOMP_FALLBACK_API_KEY: FALLBACK_KEY } });
  const { client } = await listening(t, app);
  const first = await client.responses.create({ model: 'gpt-4o-mini', input: 'My name is Ada.' });
  const next = { model: 'gpt-4o-mini', input: 'What is my name?', previous_response_id: first.id };

  state.failing = PLATFORM_KEY;
  const from = upstream.requests.length;
  const failed = await client.responses.create(next).then(
    () => null,
    (error: unknown) => error,
  );
  assert.ok(failed instanceof OpenAI.APIError && failed.status !== undefined && failed.status >= 500, String(failed));
  assert.deepEqual(
    sentSince(upstream, from).map((request) => request.headers.authorization),
    [`Bearer ${PLATFORM_KEY}`],
    'the fallback key, another account, is not tried',
  );
  const detail = await finishedRun(app, failed.headers?.get('x-svc-run-id') ?? null);
  assert.equal(detail.run.status, 'failed');
  assert.equal(detail.run.routeExplanation.fallback, null);
  assert.ok(detail.run.routeExplanation.rejectedAlternatives.some((alternative: any) => alternative.route === 'fallback' && alternative.reason.includes('chatcomp-fallback')));
  // Without upstream state the same failure fails over, as before.
  const plain = await client.responses.create({ model: 'gpt-4o-mini', input: 'What is my name?' }).withResponse();
  assert.equal(plain.response.headers.get('x-svc-route'), 'live');
  assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${FALLBACK_KEY}`);
  state.failing = null;

  // The fallback account's response, which the platform account does not hold: the upstream's 404, as it says it.
  const notHeld = await client.responses.create({ ...next, previous_response_id: plain.data.id }).then(
    () => null,
    (error: unknown) => error,
  );
  assert.ok(notHeld instanceof OpenAI.NotFoundError, String(notHeld));
  assert.equal(upstream.requests.at(-1)!.headers.authorization, `Bearer ${PLATFORM_KEY}`);
  assert.equal(validateAgainst('ErrorResponse', notHeld.error === undefined ? null : { error: notHeld.error }), null);
});

test("an organization reaches another's upstream response exactly as far as the upstream allows: every organization's requests go upstream under the platform key, whose account holds every response made with it", async (t) => {
  const { upstream } = await responsesUpstream(t);
  const { app } = await buildWithAdmin(t, { CHATCOMP_API_KEY: PLATFORM_KEY, CHATCOMP_BASE_URL: upstream.baseUrl });
  const acme = json(await app.inject({ method: 'POST', url: '/api/v1/orgs', headers: bearer(BOOT), payload: { name: 'Acme', ownerEmail: 'root@example.test' } })).org.id;
  const keyIn = async (orgId: string) => json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: operator(BOOT, orgId), payload: { name: 'k', admin: true } })).token as string;
  const { clientOf } = await listening(t, app);
  const ofDefault = clientOf(await keyIn('default'));
  const ofAcme = clientOf(await keyIn(acme));

  const acmeFirst = await ofAcme.responses.create({ model: 'gpt-4o-mini', input: "Acme's secret plan." });
  const continued = await ofDefault.responses.create({ model: 'gpt-4o-mini', input: 'Go on.', previous_response_id: acmeFirst.id });
  assert.equal(continued.output_text, `answer 2 after ${acmeFirst.id}`, "the upstream holds it in the platform account, so it answers");
  assert.deepEqual(
    upstream.requests.map((request) => request.headers.authorization),
    [`Bearer ${PLATFORM_KEY}`, `Bearer ${PLATFORM_KEY}`],
  );
  // An id the account never made is the upstream's 404 for any organization: svc neither grants nor refuses more.
  const unknown = await ofDefault.responses.create({ model: 'gpt-4o-mini', input: 'Go on.', previous_response_id: 'resp_never_made' }).then(
    () => null,
    (error: unknown) => error,
  );
  assert.ok(unknown instanceof OpenAI.NotFoundError, String(unknown));
});

test('with the mock (no live upstream) previous_response_id and conversation are a 400 naming the field and saying why, in the chat-completions error shape, buffered and streamed, before any run', async (t) => {
  const { app } = await build(t);
  const { client } = await listening(t, app);
  const cases: Array<[string, Record<string, unknown>]> = [
    ['previous_response_id', { previous_response_id: 'resp_1' }],
    ['conversation', { conversation: 'conv_1' }],
    ['conversation', { conversation: { id: 'conv_1' } }],
  ];
  for (const [field, extra] of cases) {
    for (const stream of [false, true]) {
      const refused = await client.responses.create({ model: 'gpt-4o-mini', input: 'x', stream, ...extra } as OpenAI.Responses.ResponseCreateParamsNonStreaming).then(
        () => null,
        (error: unknown) => error,
      );
      assert.ok(refused instanceof OpenAI.BadRequestError, `${field} ${stream}: ${String(refused)}`);
      assert.equal(refused.param, field);
      assert.match(refused.message, /mock provider keeps none/);
      assert.equal(validateAgainst('ErrorResponse', { error: refused.error }), null);
    }
  }
  assert.equal(json(await app.inject({ url: '/api/v1/runs' })).pagination.total, 0);
  // A null is unset, and answered as any request.
  const unset = await app.inject({ method: 'POST', url: '/v1/responses', payload: { model: 'gpt-4o-mini', input: 'x', previous_response_id: null, conversation: null } });
  assert.equal(unset.statusCode, 200, unset.body);
});
