/**
 * The reference client as built (`svc/client`: dist/client.mjs), against a real svc and against servers that are not
 * svc (what `--url` or a proxy may put in svc's place): traced tools' evidence calls, answers of the wrong shape,
 * header options, error messages and the runs list and detail queries.
 */
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import test from 'node:test';
import { ATTRIBUTION_DIMENSIONS } from '../../src/evidence/savings.ts';
import { build } from '../support/build.ts';
import { foreignServer } from '../support/foreign-server.ts';

// By its package name, which node resolves through package.json's exports to the bundle; typed from the source, so
// `npm run typecheck` needs no build (the bundle's own declarations are type-checked in package-entry.test.ts).
const packageEntry: string = 'svc/client';
const { ATTRIBUTION_DIMENSIONS: CLIENT_ATTRIBUTION_DIMENSIONS, createSvcClient, SvcApiError, SvcStreamError } =
  (await import(packageEntry)) as typeof import('../../src/client/index.ts');

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(typeof body === 'string' ? body : JSON.stringify(body));

/** The request's body, read whole. */
async function bodyOf(req: IncomingMessage): Promise<any> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : null;
}

// A guard, not a timing assertion: without a bound the calls below wait 150 s each, past the suite's per-test timeout.
const BOUNDED = { timeout: 30_000 };

test('a traced tool\'s evidence calls are bounded: traceTimeoutMs (a RangeError out of range), and a default far below the buffered deadline', BOUNDED, async (t) => {
  // svc that takes every trace call and never answers it.
  const baseUrl = await foreignServer(t, () => undefined);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 0 }), RangeError);
  assert.throws(() => createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 1.5 }), RangeError);
  const quick = createSvcClient({ baseUrl, env: {}, traceTimeoutMs: 100 });
  t.after(() => quick.close());
  const lookup = quick.tool({ name: 'lookup', sideEffectLevel: 0 }, (args: { q: string }) => `found ${args.q}`);
  assert.equal(await lookup({ q: 'a' }, { runId: 'run_1' }), 'found a', 'a trace call that never ends is a swallowed failure');
  // The default: a buffered deadline of 900 s does not hold a traced call.
  const slowBuffered = createSvcClient({ baseUrl, env: {}, bufferedTimeoutMs: 900_000 });
  t.after(() => slowBuffered.close());
  const read = slowBuffered.tool({ name: 'read', sideEffectLevel: 0 }, () => 'read');
  assert.equal(await read({}, { runId: 'run_1' }), 'read');
});

test("a traced tool call takes the caller's signal: aborted while its evidence is pending, it rejects with the abort and the tool never runs", BOUNDED, async (t) => {
  const controller = new AbortController();
  // The first trace call arrives: the caller gives up while it is pending.
  const baseUrl = await foreignServer(t, () => controller.abort(new Error('caller gave up')));
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  let ran = 0;
  const send = client.tool({ name: 'send', sideEffectLevel: 3 }, () => ++ran);
  await assert.rejects(send({}, { runId: 'run_1', signal: controller.signal }), /caller gave up/);
  assert.equal(ran, 0);
  // A signal aborted already runs nothing, traced or not.
  await assert.rejects(send({}, { signal: controller.signal }), /caller gave up/);
  assert.equal(ran, 0);
});

test('a tool-cache answer of the wrong shape is a swallowed cache failure (a miss): the tool runs, its own result is returned', async (t) => {
  const answers: unknown[] = [{ hit: true }, { hit: 'yes', result: 'stale' }, [{ hit: true, result: 'stale' }], { hit: 1, result: 'stale' }];
  let answer: unknown = null;
  const baseUrl = await foreignServer(t, (res, req) => {
    if (req.url === '/api/v1/tool-cache/check') json(res, 200, answer);
    else json(res, 201, { ok: true, runId: 'run_1', seq: 1, hash: 'h' });
  });
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  const lookup = client.tool({ name: 'lookup', sideEffectLevel: 0, ttlSeconds: 60 }, () => 'fresh');
  for (const next of answers) {
    answer = next;
    assert.equal(await lookup({}, { runId: 'run_1' }), 'fresh', JSON.stringify(next));
  }
  // A well-formed hit is served from the cache, null result included.
  for (const result of ['cached', null]) {
    answer = { hit: true, result };
    assert.equal(await lookup({}, { runId: 'run_1' }), result);
  }
});

test('a buffered answer that is not the wire\'s shape (a cache hit from a server that is not svc) is SvcApiError invalid_response naming the call and the run', async (t) => {
  const headers = { 'x-svc-run-id': 'run_abc', 'x-svc-route': 'exact_cache', 'x-request-id': 'req_1' };
  const chats: unknown[] = [
    { choices: 'none' },
    { choices: [null] },
    { choices: [{ index: 0, message: { role: 'assistant', content: 42 } }] },
    { choices: [{ index: 0, message: { content: 'hi', tool_calls: [null] } }] },
    { choices: [{ index: 0, message: { content: 'hi' } }], usage: 'lots' },
    { choices: [{ index: 0, message: { content: 'hi' } }], usage: { prompt_tokens: '1', completion_tokens: 1, total_tokens: 2 } },
  ];
  const messages: unknown[] = [
    { content: [null] },
    { content: 'hi' },
    { content: [{ type: 'text', text: 5 }] },
    { content: [{ type: 'tool_use', id: 'toolu_1' }] },
    { content: [], usage: { input_tokens: 1 } },
  ];
  let answer: unknown = null;
  const baseUrl = await foreignServer(t, (res) => json(res, 200, answer, headers));
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  for (const [path, bodies, call] of [
    ['/v1/chat/completions', chats, () => client.chat({ model: 'm', messages: [] })],
    ['/v1/messages', messages, () => client.messages({ model: 'm', max_tokens: 1, messages: [] })],
  ] as const) {
    for (const body of bodies) {
      answer = body;
      await assert.rejects(call(), (error: unknown) => {
        assert.ok(error instanceof SvcApiError, `${JSON.stringify(body)}: ${error}`);
        assert.equal(error.code, 'invalid_response');
        assert.equal(error.path, path);
        assert.equal(error.runId, 'run_abc');
        assert.match(error.message, new RegExp(`POST ${path}.*run_abc`));
        return true;
      });
    }
  }
  // The wire's own shapes still read: content null with tool calls, no usage, an empty choice list.
  answer = { model: 'm', choices: [{ index: 0, message: { content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] }, finish_reason: 'tool_calls' }] };
  assert.deepEqual((await client.chat({ model: 'm', messages: [] })).toolCalls, [{ id: 'c1', name: 'f', arguments: '{}' }]);
  answer = { model: 'm', choices: [], usage: null };
  assert.equal((await client.chat({ model: 'm', messages: [] })).content, '');
  answer = { model: 'm', content: [{ type: 'text', text: 'a' }, { type: 'thinking', thinking: '…' }, { type: 'tool_use', id: 't', name: 'f', input: {} }], stop_reason: 'tool_use', usage: { input_tokens: 1, output_tokens: 2 } };
  const read = await client.messages({ model: 'm', max_tokens: 1, messages: [] });
  assert.deepEqual([read.content, read.toolUses.length, read.usage?.totalTokens], ['a', 1, 3]);
});

test('an orgId svc would refuse (a line break, a control or non-ASCII character, over 200 characters) is a TypeError naming it at creation; nothing is sent', async (t) => {
  const tenants: Array<string | undefined> = [];
  const baseUrl = await foreignServer(t, (res, req) => {
    tenants.push(req.headers['x-svc-tenant'] as string | undefined);
    json(res, 200, { keys: [], pagination: { limit: 50, offset: 0, total: 0, hasMore: false } });
  });
  const plain = createSvcClient({ baseUrl, env: {} });
  t.after(() => plain.close());
  for (const orgId of ['org_1\r\nx-svc-tenant: org_2', 'org_1\u0000', 'org_\u00e9', 'org_1\u0007', 'o'.repeat(201)]) {
    const named = (error: unknown) => error instanceof TypeError && /orgId/.test(error.message);
    assert.throws(() => createSvcClient({ baseUrl, env: {}, orgId }), named, JSON.stringify(orgId));
    assert.throws(() => plain.inOrg(orgId), named, JSON.stringify(orgId));
  }
  assert.deepEqual(tenants, []);
  // A well-formed one is sent as svc reads it: trimmed.
  await plain.inOrg(' org_1\n').keys.list();
  assert.deepEqual(tenants, ['org_1']);
});

test('a provider name that is not one (from a server that is not svc) is null, as a malformed correlation value is empty', async (t) => {
  let provider = '';
  const baseUrl = await foreignServer(t, (res, req) => {
    const chat = req.url === '/v1/chat/completions';
    json(res, 200, chat ? { model: 'm', choices: [{ index: 0, message: { content: 'hi' }, finish_reason: 'stop' }] } : { model: 'm', content: [{ type: 'text', text: 'hi' }], stop_reason: 'end_turn' }, { 'x-svc-provider': provider });
  });
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  for (const value of ['p'.repeat(5000), '\u00e9vil', 'two words', '<script>']) {
    provider = value;
    assert.equal((await client.chat({ model: 'm', messages: [] })).provider, null, JSON.stringify(value.slice(0, 20)));
    assert.equal((await client.messages({ model: 'm', max_tokens: 1, messages: [] })).provider, null, JSON.stringify(value.slice(0, 20)));
  }
  provider = 'chatcomp-tenant';
  assert.equal((await client.chat({ model: 'm', messages: [] })).provider, 'chatcomp-tenant');
});

test("an error's message quotes at most 500 characters of the server's message, its controls escaped; a code that is not one is http_<status>", async (t) => {
  const hostile = `\u001b]52;c;aGk=\u0007\u001b[2J${'x'.repeat(2_000_000)}`;
  const baseUrl = await foreignServer(t, (res) => json(res, 400, { error: { code: 'bad\r\nInjected: yes', message: hostile } }));
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  for (const [call, name] of [[() => client.keys.list(), 'GET /api/v1/keys'], [() => client.chat({ model: 'm', messages: [] }), 'POST /v1/chat/completions']] as const) {
    await assert.rejects(call(), (error: unknown) => {
      assert.ok(error instanceof SvcApiError, String(error));
      assert.ok(error.message.length < 600, `${error.message.length} characters`);
      assert.doesNotMatch(error.message, /[\u0000-\u001f\u007f-\u009f]/);
      assert.ok(error.message.startsWith(`${name}: HTTP 400: \\u001b]52;c;aGk=\\u0007\\u001b[2Jxxx`), error.message.slice(0, 80));
      assert.ok(error.message.endsWith('x…'), 'the server\'s message cut at 500 characters');
      assert.equal(error.code, 'http_400');
      return true;
    });
  }
  // The body as the error carries it: its first 500 characters, quoted as the message is (a proxy's page may hold an
  // escape sequence, a bidirectional override, or an emoji cut in half at character 500).
  let page = '';
  const proxy = createSvcClient({ baseUrl: await foreignServer(t, (res) => res.writeHead(502, { 'content-type': 'text/html' }).end(page)), env: {} });
  t.after(() => proxy.close());
  for (const [text, expected] of [
    [`\u001b[2J<h1>Bad gateway</h1>\u202e${'x'.repeat(2_000)}`, `\\u001b[2J<h1>Bad gateway</h1>\\u202e${'x'.repeat(475)}…`],
    [`${'a'.repeat(499)}\u{1f600}${'b'.repeat(100)}`, `${'a'.repeat(499)}…`],
    ['<h1>Bad gateway</h1>', '<h1>Bad gateway</h1>'],
  ]) {
    page = text!;
    await assert.rejects(proxy.keys.list(), (error: unknown) => {
      assert.ok(error instanceof SvcApiError, String(error));
      assert.deepEqual([error.method, error.path, error.status], ['GET', '/api/v1/keys', 502]);
      assert.equal(error.body, expected);
      return true;
    });
  }
  // A stream's error event, likewise.
  const streaming = await foreignServer(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'x-svc-run-id': 'run_abc' });
    res.end(`data: ${JSON.stringify({ error: { message: hostile } })}\n\n`);
  });
  const streamClient = createSvcClient({ baseUrl: streaming, env: {} });
  t.after(() => streamClient.close());
  await assert.rejects(
    (async () => {
      for await (const _ of streamClient.chatStream({ model: 'm', messages: [] })) void _;
    })(),
    (error: unknown) => {
      assert.ok(error instanceof SvcStreamError, String(error));
      assert.ok(error.message.length < 600 && !/[\u0000-\u001f]/.test(error.message), error.message.slice(0, 60));
      assert.equal((error.detail as { message: string }).message, hostile, 'the whole error object stays on detail');
      return true;
    },
  );
  // svc's own errors read as svc wrote them.
  const { app } = await build(t);
  const svc = createSvcClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), env: {} });
  t.after(() => svc.close());
  await assert.rejects(svc.runs.get('run_missing'), (error: unknown) => error instanceof SvcApiError && error.message.endsWith(': Run not found.') && error.code === 'not_found');
});

test("an error's message names the call and its status (SPEC 4.20), so a log of the message alone tells which call failed", async (t) => {
  // A proxy's page: no message of the server's to quote, and the code says nothing the status does not.
  const proxy = createSvcClient({ baseUrl: await foreignServer(t, (res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>')), env: {} });
  t.after(() => proxy.close());
  await assert.rejects(proxy.keys.list(), (error: unknown) => error instanceof SvcApiError && error.message === "GET /api/v1/keys: HTTP 502 with an HTML page, not svc's error: is it svc?");
  // svc's own error envelope: its code and message after the call.
  const { app } = await build(t);
  const svc = createSvcClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), env: {} });
  t.after(() => svc.close());
  await assert.rejects(svc.runs.get('run_missing'), (error: unknown) => {
    assert.ok(error instanceof SvcApiError, String(error));
    assert.equal(error.message, 'GET /api/v1/runs/run_missing: HTTP 404 not_found: Run not found.');
    assert.equal(error.code, 'not_found');
    return true;
  });
});

test('runs.list and runs.get take the filters and windows svc documents, checked before anything is sent', async (t) => {
  const { app, services } = await build(t);
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());
  const { runId } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'windows' }] });
  for (const rating of [1, 2, 3]) await client.feedback.rate(runId, rating);
  await services.store.flush();

  const detail = await client.runs.get(runId, { feedbackLimit: 1, sideEffectLimit: 1, limit: 1 });
  assert.equal(detail.feedback.length, 1);
  assert.deepEqual([detail.feedbackWindow.total, detail.feedbackWindow.hasMore], [3, true]);
  const older = await client.runs.get(runId, { feedbackLimit: 2, feedbackBefore: detail.feedbackWindow.nextBefore! });
  assert.equal(older.feedback.length, 2);
  assert.equal(detail.sideEffectWindow.total, 0);

  const listed = await client.runs.list({ status: 'completed', route: 'live', model: 'gpt-4o-mini', since: 0, limit: 1, offset: 0 });
  assert.deepEqual(listed.runs.map((run) => run.id), [runId]);
  // A walk by the cursor: the page after the newer run is the older one, and the last page says so.
  const { runId: newer } = await client.chat({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'a newer run' }] });
  const first = await client.runs.list({ limit: 1 });
  assert.deepEqual([first.runs.map((run) => run.id), first.pagination.nextBefore], [[newer], newer]);
  const next = await client.runs.list({ limit: 1, before: first.pagination.nextBefore! });
  assert.deepEqual([next.runs.map((run) => run.id), next.pagination.nextBefore, next.pagination.hasMore], [[runId], null, false]);

  // Filters svc does not have (it would ignore them and answer every run) and values no query can carry.
  for (const [call, option] of [
    [() => client.runs.list({ app: 'checkout' } as never), 'app'],
    [() => client.runs.list({ limit: 1.5 }), 'limit'],
    [() => client.runs.list({ offset: -1 }), 'offset'],
    [() => client.runs.list({ since: Number.NaN }), 'since'],
    [() => client.runs.list({ status: 7 } as never), 'status'],
    [() => client.runs.list({ before: 7 } as never), 'before'],
    [() => client.runs.get(runId, { feedbackBefore: 0 }), 'feedbackBefore'],
    [() => client.runs.get(runId, { sideEffects: 1 } as never), 'sideEffects'],
    [() => client.runs.events(runId, { before: Number.NaN }), 'before'],
  ] as const) {
    await assert.rejects(call(), (error: unknown) => error instanceof TypeError && error.message.includes(option), option);
  }
});

test('every other call with query options takes the options its route documents, checked before anything is sent', async (t) => {
  const { app } = await build(t);
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = createSvcClient({ baseUrl, env: {} });
  t.after(() => client.close());

  // Each documented option is one svc reads.
  assert.equal((await client.keys.list({ limit: 1, offset: 0 })).pagination.limit, 1);
  assert.equal((await client.users.list({ limit: 2, offset: 0, email: 'nobody@example.com' })).pagination.limit, 2);
  assert.equal((await client.orgs.list({ limit: 3, offset: 0 })).pagination.limit, 3);
  assert.equal((await client.orgs.listInvites({ limit: 4, offset: 0, status: 'pending' })).pagination.limit, 4);
  const audit = await client.audit.list({ limit: 5, before: 1_000_000, decision: 'allow', verify: true });
  assert.equal(audit.window.limit, 5);
  assert.equal(audit.integrity?.ok, true);
  assert.equal((await client.audit.list({ verify: false })).integrity, undefined);
  await client.economics.savings({ since: '2026-01-01', until: Date.now() });
  assert.deepEqual([...CLIENT_ATTRIBUTION_DIMENSIONS], [...ATTRIBUTION_DIMENSIONS], "the client's attribution dimensions are svc's");
  for (const dim of CLIENT_ATTRIBUTION_DIMENSIONS) await client.economics.attribution({ since: 0, [`${dim}Limit`]: 1, [`${dim}Offset`]: 0 });

  // An option svc does not have (it would ignore it: the caller believes the list filtered) or a value no query can carry.
  const sent: string[] = [];
  const foreign = createSvcClient({ baseUrl: await foreignServer(t, (res, req) => (sent.push(req.url!), json(res, 200, {}))), env: {} });
  t.after(() => foreign.close());
  for (const [call, option] of [
    [() => foreign.keys.list({ appId: 'checkout' } as never), 'appId'],
    [() => foreign.keys.list({ limit: Number.NaN }), 'limit'],
    [() => foreign.users.list({ role: 'admin' } as never), 'role'],
    [() => foreign.users.list({ offset: -1 }), 'offset'],
    [() => foreign.orgs.list({ limit: 1.5 }), 'limit'],
    [() => foreign.orgs.listInvites({ email: 'a@example.com' } as never), 'email'],
    [() => foreign.audit.list({ offset: 50 } as never), 'offset'],
    [() => foreign.audit.list({ before: 0 }), 'before'],
    [() => foreign.audit.list({ verify: 'yes' } as never), 'verify'],
    [() => foreign.economics.savings({ from: '2026-01-01' } as never), 'from'],
    [() => foreign.economics.savings({ since: Number.NaN }), 'since'],
    [() => foreign.economics.attribution({ modelLimit: 2.5 }), 'modelLimit'],
    [() => foreign.economics.attribution({ regionLimit: 5 } as never), 'regionLimit'],
  ] as const) {
    await assert.rejects(call(), (error: unknown) => error instanceof TypeError && error.message.includes(option), option);
  }
  assert.deepEqual(sent, []);
});
