/** SPEC 4.9 feedback rules, SPEC 4.19 ingestion and trace appends, side-effect records (SPEC 2.3). */
import assert from 'node:assert/strict';
import test from 'node:test';
import { flattenMetrics } from '../../src/evidence/feedback-rules.ts';
import { bearer, build, json, newChatRun } from '../support/build.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';
import { overriding } from '../support/counting-store.ts';
import type { Store } from '../../src/store/store.ts';

const BOOT = 'bootstrap-token-feedback-tests-0001';
const admin = bearer(BOOT);

async function setup(t: any) {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const post = async (url: string, payload: unknown, headers: Record<string, string> = admin) => {
    const response = await built.app.inject({ method: 'POST', url, payload: payload as any, headers });
    return { status: response.statusCode, body: json(response) };
  };
  const get = async (url: string) => json(await built.app.inject({ url, headers: admin }));
  const newRun = () => newChatRun(built.app, admin);
  return { ...built, post, get, newRun };
}

test('ratings: thumbs up 5, thumbs down -1, corrections; shown on the run; bad ratings change nothing', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const up = await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 5 });
  assert.equal(up.status, 201);
  assert.equal(up.body.feedback.type, 'rating');
  assert.equal(up.body.feedback.rating, 5);
  assert.match(up.body.feedback.id, /^fbk_/);
  const down = await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: -1, correction: 'Paris, not Lyon.' });
  assert.equal(down.body.feedback.correction, 'Paris, not Lyon.');

  for (const bad of [{ type: 'rating', rating: 6 }, { type: 'rating', rating: -2 }, { type: 'rating' }, { type: 'stars', rating: 5 }, { type: 'rating', rating: '5' }, { type: 'rating', rating: 5, extra: 1 }, { type: 'rating', rating: 5, correction: '   ' }]) {
    assert.equal((await post(`/api/v1/runs/${runId}/feedback`, bad)).status, 400, JSON.stringify(bad));
  }
  assert.equal((await post('/api/v1/runs/run_nope/feedback', { type: 'rating', rating: 5 })).status, 404);
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.deepEqual(detail.feedback.map((f: any) => f.rating), [5, -1]);
});

test('metrics feedback: leaves, namespaces flattened deterministically, every rejection rule', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const ok = await post(`/api/v1/runs/${runId}/feedback/metrics`, {
    metrics: { quality: { relevance: { score: 0.8, reason: 'on topic' }, grounded: true }, latency_ok: true, 'style.tone': 'formal', words: 120 },
    optimize: 'max',
    tags: { suite: 'nightly' },
    source: 'eval-harness',
    evaluator: { name: 'judge', version: 3 },
  });
  assert.equal(ok.status, 201, JSON.stringify(ok.body));
  assert.deepEqual(
    ok.body.feedback.metrics.map((leaf: any) => [leaf.name, leaf.kind]),
    [['latency_ok', 'boolean'], ['quality.grounded', 'boolean'], ['quality.relevance', 'score'], ['style.tone', 'string'], ['words', 'number']],
  );
  assert.equal(ok.body.feedback.metrics[2].reason, 'on topic');
  assert.equal(ok.body.feedback.optimize, 'max');

  const base = { optimize: 'max', source: 'eval' };
  const rejected: Array<[string, unknown]> = [
    ['array leaf', { ...base, metrics: { scores: [1, 2] } }],
    ['ambiguous dotted key', { ...base, metrics: { 'a.b': 1, a: { b: 2 } } }],
    ['dotted key over a leaf', { ...base, metrics: { a: 1, 'a.b': 2 } }],
    ['empty segment', { ...base, metrics: { 'a..b': 1 } }],
    ['unsafe key', { ...base, metrics: { prototype: 1 } }],
    ['key with spaces', { ...base, metrics: { 'bad key': 1 } }],
    ['null leaf', { ...base, metrics: { a: null } }],
    ['score not a number', { ...base, metrics: { a: { score: 'high' } } }],
    ['empty namespace', { ...base, metrics: { a: {} } }],
    ['missing optimize', { metrics: { a: 1 }, source: 'eval' }],
    ['unknown direction', { ...base, optimize: 'up', metrics: { a: 1 } }],
    ['missing source', { optimize: 'max', metrics: { a: 1 } }],
    ['unsafe tag key', { ...base, metrics: { a: 1 }, tags: { 'bad key!': 'x' } }],
    ['nested tag', { ...base, metrics: { a: 1 }, tags: { a: { b: 1 } } }],
    ['oversized', { ...base, metrics: { a: 'x'.repeat(1500), ...Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`m${i}`, 'y'.repeat(1500)])) } }],
    ['too deep', { ...base, metrics: { a: { b: { c: { d: { e: { f: { g: { h: { i: 1 } } } } } } } } } }],
    ['unknown field', { ...base, metrics: { a: 1 }, extra: true }],
  ];
  for (const [label, body] of rejected) {
    const response = await post(`/api/v1/runs/${runId}/feedback/metrics`, body);
    assert.equal(response.status, 400, label);
    assert.ok(response.body.error, label);
  }
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.equal(detail.feedback.length, 1, 'rejected events stored nothing');
});

test('metrics feedback: the top level names the metrics even when shaped like {score, reason}; depth counts dotted segments as nesting', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const base = { optimize: 'max', source: 'x' };
  const send = (metrics: unknown) => post(`/api/v1/runs/${runId}/feedback/metrics`, { ...base, metrics });
  const leaves = (response: { body: any }) => response.body.feedback.metrics.map((leaf: any) => [leaf.name, leaf.kind, leaf.value]);

  const score = await send({ score: 5 });
  assert.equal(score.status, 201, JSON.stringify(score.body));
  assert.deepEqual(leaves(score), [['score', 'number', 5]]);
  assert.deepEqual(leaves(await send({ score: 0.5, reason: 'why' })), [['reason', 'string', 'why'], ['score', 'number', 0.5]]);
  assert.deepEqual(leaves(await send({ score: { score: 0.5, reason: 'why' } })), [['score', 'score', 0.5]]);
  assert.deepEqual(leaves(await send({ 'a.b.c.d.e.f.g.h': 1 })), [['a.b.c.d.e.f.g.h', 'number', 1]], 'eight levels by dots');
  assert.deepEqual(leaves(await send({ a: { b: { 'c.d.e.f.g.h': { score: 1 } } } })), [['a.b.c.d.e.f.g.h', 'score', 1]], 'eight levels mixed');

  for (const deep of [{ 'a.b.c.d.e.f.g.h.i.j.k': 1 }, { 'a.b.c.d.e.f.g.h.i': 1 }, { a: { 'b.c.d.e.f.g.h.i': true } }, { a: { b: { c: { d: { 'e.f.g.h': { i: 'x' } } } } } }]) {
    const response = await send(deep);
    assert.equal(response.status, 400, JSON.stringify(deep));
    assert.match(response.body.error.message, /deeper than 8 levels/);
  }
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.equal(detail.feedback.length, 5, 'rejected events stored nothing');
  assert.ok(detail.feedback.every((f: any) => f.metrics.every((leaf: any) => leaf.name !== '')), 'no metric without a name');
});

test('metric flattening rejects cycles (the service may be handed objects, not only JSON)', () => {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  assert.throws(() => flattenMetrics(cyclic), /cycle/);
});

test('trace: SDK events append to the chain, side effects follow their events, integrity holds', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const before = (await get(`/api/v1/runs/${runId}`)).run.eventCount;
  const events: Array<[string, Record<string, unknown>]> = [
    ['tool.called', { name: 'lookup', args: { q: 'x' }, sideEffectLevel: 0 }],
    ['tool.completed', { name: 'lookup', result: { hits: 3 }, cached: false }],
    ['side_effect.planned', { toolName: 'send_email', level: 3, payload: { to: 'ops@example.com' }, idempotencyKey: 'mail-42' }],
    ['tool.completed', { name: 'send_email', result: { sent: true } }],
    ['side_effect.planned', { toolName: 'refund', level: 4, payload: { amount: 10 } }],
    ['side_effect.blocked', { toolName: 'refund', reason: 'over the refund limit' }],
  ];
  let lastSeq = before;
  for (const [type, payload] of events) {
    const response = await post('/api/v1/trace', { runId, type, payload });
    assert.equal(response.status, 201, JSON.stringify(response.body));
    assert.equal(response.body.seq, lastSeq + 1);
    lastSeq = response.body.seq;
  }
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.deepEqual(
    detail.sideEffects.map((s: any) => [s.toolName, s.state, s.idempotencyKey, s.reason]),
    [['send_email', 'executed', 'mail-42', null], ['refund', 'blocked', null, 'over the refund limit']],
  );
  assert.equal(detail.run.eventCount, before + events.length);
  const integrity = await get(`/api/v1/runs/${runId}/integrity`);
  assert.equal(integrity.ok, true);
  assert.equal(integrity.eventCount, before + events.length);
});

test('trace: only SDK event types, validated payloads; rejected events change nothing', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const before = (await get(`/api/v1/runs/${runId}`)).run.eventCount;
  const rejected: Array<[string, unknown]> = [
    ['server-owned type', { runId, type: 'run.completed', payload: {} }],
    ['chorus type', { runId, type: 'chorus.receipt', payload: {} }],
    ['level out of range', { runId, type: 'tool.called', payload: { name: 'x', args: {}, sideEffectLevel: 5 } }],
    ['missing name', { runId, type: 'tool.completed', payload: { result: 1 } }],
    ['idempotency key too long', { runId, type: 'side_effect.planned', payload: { toolName: 'x', level: 2, payload: {}, idempotencyKey: 'k'.repeat(121) } }],
    ['payload not an object', { runId, type: 'tool.called', payload: [1] }],
    ['oversized payload', { runId, type: 'tool.completed', payload: { name: 'x', result: 'r'.repeat(300 * 1024) } }],
    ['missing runId', { type: 'tool.called', payload: { name: 'x', args: {}, sideEffectLevel: 0 } }],
  ];
  for (const [label, body] of rejected) assert.equal((await post('/api/v1/trace', body)).status, 400, label);
  assert.equal((await post('/api/v1/trace', { runId: 'run_nope', type: 'tool.called', payload: { name: 'x', args: {}, sideEffectLevel: 0 } })).status, 404);
  assert.equal((await get(`/api/v1/runs/${runId}`)).run.eventCount, before);
});

test('trace: names and idempotency keys are stored trimmed, as validated, so a later event naming them bare finds the record', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const pad = ' '.repeat(300);
  const planned = await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `${pad}send`, level: 3, payload: { to: 'a' }, idempotencyKey: `${pad}k1${pad}`, note: '  kept as sent  ' } });
  assert.equal(planned.status, 201, JSON.stringify(planned.body));
  assert.equal((await post('/api/v1/trace', { runId, type: 'tool.called', payload: { name: `${pad}lookup `, args: {}, sideEffectLevel: 0 } })).status, 201);
  assert.equal((await post('/api/v1/trace', { runId, type: 'side_effect.executed', payload: { toolName: 'send', idempotencyKey: 'k1' } })).status, 201);

  const detail = await get(`/api/v1/runs/${runId}`);
  assert.deepEqual(detail.sideEffects.map((s: any) => [s.toolName, s.idempotencyKey, s.state]), [['send', 'k1', 'executed']]);
  const plannedEvent = detail.events.find((e: any) => e.type === 'side_effect.planned');
  assert.deepEqual(plannedEvent.payload, { toolName: 'send', level: 3, payload: { to: 'a' }, idempotencyKey: 'k1', note: '  kept as sent  ' });
  assert.equal(detail.events.find((e: any) => e.type === 'tool.called').payload.name, 'lookup');
  assert.equal((await get(`/api/v1/runs/${runId}/integrity`)).ok, true);
});

test('trace into a run whose request is still writing it goes through its recorder: one unbroken chain', async (t) => {
  const { services, post, get } = await setup(t);
  const recorder = services.ledger.start(runStart({ stream: true }));
  const appended = await post('/api/v1/trace', { runId: recorder.id, type: 'tool.called', payload: { name: 'x', args: {}, sideEffectLevel: 0 } });
  assert.equal(appended.status, 201);
  recorder.event('provider.attempt', { provider: 'mock' });
  recorder.finish(completedOutcome());
  await post('/api/v1/trace', { runId: recorder.id, type: 'tool.completed', payload: { name: 'x', result: 1 } });
  const integrity = await get(`/api/v1/runs/${recorder.id}/integrity`);
  assert.equal(integrity.ok, true, JSON.stringify(integrity));
  assert.equal(integrity.eventCount, 5);
});

test('ingest: an externally handled prompt becomes a completed observed run', async (t) => {
  const { post, get } = await setup(t);
  const created = await post('/api/v1/ingest/prompt', { source: 'langchain', prompt: 'Summarise the meeting notes.', sessionId: 'sess-1', metadata: { model: 'gpt-4o', team: 'ops' } }, { ...admin, 'x-svc-app': 'notes' });
  assert.equal(created.status, 201);
  assert.match(created.body.runId, /^run_/);
  const detail = await get(`/api/v1/runs/${created.body.runId}`);
  assert.equal(detail.run.status, 'completed');
  assert.equal(detail.run.mode, 'observe');
  assert.equal(detail.run.wire, 'sdk_ingest');
  assert.equal(detail.run.model, 'gpt-4o');
  assert.equal(detail.run.provider, 'langchain');
  assert.equal(detail.run.appId, 'notes');
  assert.ok(detail.run.usage.promptTokens > 0);
  const ingested = detail.events.find((e: any) => e.type === 'prompt.ingested');
  assert.equal(ingested.payload.prompt, 'Summarise the meeting notes.');
  assert.equal(ingested.payload.sessionId, 'sess-1');

  for (const bad of [{ prompt: 'x' }, { source: 'a', prompt: '' }, { source: 'a', prompt: 'x', extra: 1 }, { source: 'a', prompt: 'x', metadata: { nested: { a: 1 } } }]) {
    assert.equal((await post('/api/v1/ingest/prompt', bad)).status, 400, JSON.stringify(bad));
  }
});

test("ingest: metadata.model is held to the gateway's rule for a model, so the runs list's model filter finds every ingested run", async (t) => {
  const { post, get } = await setup(t);
  const before = (await get('/api/v1/runs')).pagination.total;
  for (const model of ['m'.repeat(257), 'gpt\u0007x', 'gpt\u202Ex', '   ']) {
    const refused = await post('/api/v1/ingest/prompt', { source: 'sdk', prompt: 'x', metadata: { model } });
    assert.equal(refused.status, 400, JSON.stringify(model));
    assert.equal(refused.body.error.code, 'invalid_request');
    assert.match(refused.body.error.message, /metadata\.model/);
  }
  assert.equal((await get('/api/v1/runs')).pagination.total, before, 'a refused ingest records nothing');

  const longest = 'm'.repeat(256);
  for (const model of [longest, '  padded-model  ']) {
    const created = await post('/api/v1/ingest/prompt', { source: 'sdk', prompt: 'x', metadata: { model } });
    assert.equal(created.status, 201);
    const found = await get(`/api/v1/runs?model=${encodeURIComponent(model.trim())}`);
    assert.deepEqual(found.runs.map((run: any) => run.id), [created.body.runId]);
  }
  const padded = await get('/api/v1/runs?model=padded-model');
  assert.equal(padded.runs[0].model, 'padded-model', 'recorded trimmed, as a gateway request\'s model is');
});

test("ingest: source, the run's provider, is held to the rule of a model's name, so that it reads as what it is in the runs list and attribution", async (t) => {
  const { post, get } = await setup(t);
  const before = (await get('/api/v1/runs')).pagination.total;
  // Read as `langchain` (a zero-width space, a BOM), reversed on screen, a terminal's escape, nothing visible.
  for (const source of ['langchain\u200b', 'lang\uFEFFchain', 'lang\u202Echain', 'a\u001b[31mred', '\u200b', 's'.repeat(101)]) {
    const refused = await post('/api/v1/ingest/prompt', { source, prompt: 'x' });
    assert.equal(refused.status, 400, JSON.stringify(source));
    assert.equal(refused.body.error.code, 'invalid_request');
    assert.match(refused.body.error.message, /^source: /);
  }
  assert.equal((await get('/api/v1/runs')).pagination.total, before, 'a refused ingest records nothing');
  const created = await post('/api/v1/ingest/prompt', { source: '  LangChain 0.3 (Python)  ', prompt: 'x' });
  assert.equal(created.status, 201);
  const found = await get(`/api/v1/runs?provider=${encodeURIComponent('LangChain 0.3 (Python)')}`);
  assert.deepEqual(found.runs.map((run: any) => [run.id, run.provider]), [[created.body.runId, 'LangChain 0.3 (Python)']]);
});

test("trace: a run's client payloads are bounded (16 MiB), on a committed run and on one its request is still writing; a full trace refuses with 409 and changes nothing", async (t) => {
  const { services, post, get, newRun } = await setup(t);
  const { RUN_CLIENT_TRACE_MAX_BYTES, TRACE_PAYLOAD_MAX_BYTES } = await import('../../src/evidence/sdk-events.ts');
  const big = { name: 'x', result: 'r'.repeat(TRACE_PAYLOAD_MAX_BYTES - 100) };
  const fits = Math.floor(RUN_CLIENT_TRACE_MAX_BYTES / Buffer.byteLength(JSON.stringify(big)));
  const runId = await newRun();
  for (let i = 0; i < fits; i++) assert.equal((await post('/api/v1/trace', { runId, type: 'tool.completed', payload: big })).status, 201, `append ${i}`);
  const before = await get(`/api/v1/runs/${runId}/integrity`);
  const full = await post('/api/v1/trace', { runId, type: 'tool.completed', payload: big });
  assert.equal(full.status, 409);
  assert.equal(full.body.error.code, 'conflict');
  assert.match(full.body.error.message, /trace is full/);
  const after = await get(`/api/v1/runs/${runId}/integrity`);
  assert.deepEqual([after.ok, after.eventCount], [true, before.eventCount]);
  // A small event still fits under the bytes left.
  assert.equal((await post('/api/v1/trace', { runId, type: 'tool.completed', payload: { name: 'x', result: 1 } })).status, 201);

  // The same budget while the run's request is still writing it (its recorder appends).
  const recorder = services.ledger.start(runStart({ stream: true }));
  for (let i = 0; i < fits; i++) assert.equal((await post('/api/v1/trace', { runId: recorder.id, type: 'tool.completed', payload: big })).status, 201);
  assert.equal((await post('/api/v1/trace', { runId: recorder.id, type: 'tool.completed', payload: big })).status, 409);
});

test("trace: a run's events are bounded in number too; the repository refuses an append past the limit", async (t) => {
  const { services, newRun } = await setup(t);
  const runId = await newRun();
  await services.store.flush();
  const repo = (await import('../../src/evidence/repo.ts')).createRunsRepository(services.store);
  const head = (await services.store.read((sql) => sql.get<{ event_count: number }>('SELECT event_count FROM runs WHERE id = ?', [runId])))!;
  const budget = { bytes: 10, maxEvents: head.event_count + 2, maxClientBytes: 1_000_000 };
  const append = () =>
    repo.appendCommitted('default', runId, (last) => [{ runId, seq: last.seq + 1, type: 'tool.completed', payload: {}, createdAt: 1, prevHash: last.hash, hash: `h${last.seq + 1}` }], budget);
  assert.ok(Array.isArray(await append()));
  assert.ok(Array.isArray(await append()));
  assert.equal(await append(), 'full');
});

test('feedback: a run holds at most 200 records; the next is 409 and changes nothing', async (t) => {
  const { post, get, newRun } = await setup(t);
  const { RUN_FEEDBACK_MAX } = await import('../../src/evidence/service.ts');
  const runId = await newRun();
  for (let i = 0; i < RUN_FEEDBACK_MAX; i++) assert.equal((await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 5 })).status, 201);
  const refused = await post(`/api/v1/runs/${runId}/feedback/metrics`, { metrics: { score: 1 }, optimize: 'max', source: 'x' });
  assert.equal(refused.status, 409);
  assert.equal((await get(`/api/v1/runs/${runId}/evidence-packet`)).feedback.length, RUN_FEEDBACK_MAX);
});

test('trace: an append whose run\'s request finishes while its bytes are counted is chained in the store, not lost to a later append taking its seq', async (t) => {
  // The append's first write (counting its bytes against the run) is held until the test lets it go.
  let gate: { reached: () => void; held: Promise<void> } | null = null;
  const wrapStore = (store: Store): Store =>
    overriding(store, {
      write: (inner) => (fn) => {
        const armed = gate;
        gate = null;
        const written = inner.write(fn);
        if (!armed) return written;
        armed.reached();
        return written.then(async (value) => {
          await armed.held;
          return value;
        });
      },
    });
  const { app, services } = await build(t, { env: { SVC_API_KEY: BOOT }, wrapStore });
  const post = async (payload: unknown) => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/trace', payload: payload as any, headers: admin });
    return { status: response.statusCode, body: json(response) };
  };
  const get = async (url: string) => json(await app.inject({ url, headers: admin }));
  const recorder = services.ledger.start(runStart({ stream: true }));
  await services.store.flush();

  let release!: () => void;
  let reached!: () => void;
  const counting = new Promise<void>((resolve) => (reached = resolve));
  gate = { reached, held: new Promise<void>((resolve) => (release = resolve)) };
  const planned = post({ runId: recorder.id, type: 'side_effect.planned', payload: { toolName: 'send', level: 3, payload: { to: 'a' } } });
  await counting;
  // The stream ends meanwhile, and another append finds the run finished: it chains in the store.
  recorder.finish(completedOutcome());
  const later = await post({ runId: recorder.id, type: 'tool.called', payload: { name: 'lookup', args: {}, sideEffectLevel: 0 } });
  release();
  const first = await planned;
  assert.deepEqual([first.status, later.status], [201, 201]);
  assert.notEqual(first.body.seq, later.body.seq);

  const detail = await get(`/api/v1/runs/${recorder.id}`);
  const hashes = detail.events.map((event: any) => event.hash);
  assert.ok(hashes.includes(first.body.hash), 'the first append answered 201: its event is in the trace');
  assert.ok(hashes.includes(later.body.hash));
  assert.deepEqual(detail.sideEffects.map((effect: any) => [effect.toolName, effect.seq]), [['send', first.body.seq]]);
  const integrity = await get(`/api/v1/runs/${recorder.id}/integrity`);
  assert.deepEqual([integrity.ok, integrity.eventCount], [true, 4], JSON.stringify(integrity));
  const counted = await services.store.read((sql) => sql.get<{ bytes: number }>('SELECT client_trace_bytes AS bytes FROM runs WHERE id = ?', [recorder.id]));
  const sizes = detail.events.filter((event: any) => !event.type.startsWith('run.')).map((event: any) => Buffer.byteLength(JSON.stringify(event.payload)));
  assert.equal(counted?.bytes, sizes[0] + sizes[1], 'each payload counted once');
});

test("trace: concurrent appends to a run its request is still writing take the trace no further than its 10,000 events", async (t) => {
  const { services, app, get } = await setup(t);
  const { RUN_TRACE_MAX_EVENTS } = await import('../../src/evidence/sdk-events.ts');
  const recorder = services.ledger.start(runStart({ stream: true }));
  // The request's own events leave room for two more.
  for (let seq = 2; seq <= RUN_TRACE_MAX_EVENTS - 2; seq++) recorder.event('provider.chunk', { seq });
  await services.store.flush();
  const appends = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      app.inject({ method: 'POST', url: '/api/v1/trace', headers: admin, payload: { runId: recorder.id, type: 'tool.called', payload: { name: `tool-${i}`, args: {}, sideEffectLevel: 0 } } }),
    ),
  );
  assert.deepEqual(appends.map((append) => append.statusCode).sort(), [201, 201, 409, 409, 409, 409, 409, 409, 409, 409]);
  const integrity = await get(`/api/v1/runs/${recorder.id}/integrity`);
  assert.deepEqual([integrity.ok, integrity.eventCount], [true, RUN_TRACE_MAX_EVENTS]);
});

test('trace: a retried keyed append is acknowledged with the first event and recorded once, also when sent at once', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const before = (await get(`/api/v1/runs/${runId}`)).run.eventCount;
  const planned = { runId, type: 'side_effect.planned', payload: { toolName: 'refund', level: 4, payload: { amount: 10 }, idempotencyKey: 'refund-7' } };
  const executed = { runId, type: 'side_effect.executed', payload: { toolName: 'refund', idempotencyKey: 'refund-7' } };

  const first = await post('/api/v1/trace', planned);
  assert.equal(first.status, 201);
  const retried = await post('/api/v1/trace', planned);
  assert.equal(retried.status, 200, JSON.stringify(retried.body));
  assert.deepEqual(retried.body, { ...first.body, replayed: true });

  // A client retrying an append whose answer it lost sends it again, maybe several times at once.
  const answers = await Promise.all(Array.from({ length: 8 }, () => post('/api/v1/trace', executed)));
  assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  assert.equal(new Set(answers.map((a) => `${a.body.seq} ${a.body.hash}`)).size, 1, 'every answer names the one event');

  const detail = await get(`/api/v1/runs/${runId}`);
  assert.equal(detail.run.eventCount, before + 2);
  assert.deepEqual(detail.events.filter((e: any) => e.type.startsWith('side_effect.')).map((e: any) => e.type), ['side_effect.planned', 'side_effect.executed']);
  assert.deepEqual(detail.sideEffects.map((s: any) => [s.toolName, s.state, s.idempotencyKey]), [['refund', 'executed', 'refund-7']]);

  // The key names one event: reused with another payload it is refused, and appends nothing.
  const reused = await post('/api/v1/trace', { ...executed, payload: { ...executed.payload, reason: 'another' } });
  assert.equal(reused.status, 409);
  assert.equal(reused.body.error.code, 'conflict');
  assert.equal((await get(`/api/v1/runs/${runId}`)).run.eventCount, before + 2);
  // Keys are per run and per type: the same key on another run, or another outcome type, is its own event.
  assert.equal((await post('/api/v1/trace', { ...planned, runId: await newRun() })).status, 201);
  assert.equal((await get(`/api/v1/runs/${runId}/integrity`)).ok, true);
});

test('trace: keyed appends to a run whose request is still writing it are recorded once too', async (t) => {
  const { services, post, get } = await setup(t);
  const recorder = services.ledger.start(runStart({ stream: true }));
  const planned = { runId: recorder.id, type: 'side_effect.planned', payload: { toolName: 'send', level: 3, payload: {}, idempotencyKey: 'k-1' } };
  const answers = await Promise.all(Array.from({ length: 4 }, () => post('/api/v1/trace', planned)));
  assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 201]);
  assert.equal(new Set(answers.map((a) => a.body.seq)).size, 1);
  recorder.finish(completedOutcome());
  assert.equal((await post('/api/v1/trace', planned)).status, 200, 'also once the request finished');
  const detail = await get(`/api/v1/runs/${recorder.id}`);
  assert.equal(detail.events.filter((e: any) => e.type === 'side_effect.planned').length, 1);
  assert.equal(detail.sideEffects.length, 1);
  assert.equal((await get(`/api/v1/runs/${recorder.id}/integrity`)).ok, true);
});

test('trace: an idempotencyKey among the extra fields of a tool.* event is data, not a key: every such event is appended', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const before = (await get(`/api/v1/runs/${runId}`)).run.eventCount;
  // Two calls of one tool, an SDK noting the key of the side effect beside each: two events, though args differ.
  const calls = [
    { name: 'refund', args: { amount: 10 }, sideEffectLevel: 0, idempotencyKey: 'refund-7' },
    { name: 'refund', args: { amount: 20 }, sideEffectLevel: 0, idempotencyKey: 'refund-7' },
    { name: 'refund', args: { amount: 20 }, sideEffectLevel: 0, idempotencyKey: '  ' + 'k'.repeat(500) },
    { name: 'refund', args: { amount: 20 }, sideEffectLevel: 0, idempotencyKey: '  ' + 'k'.repeat(500) },
  ];
  for (const [i, payload] of calls.entries()) {
    const appended = await post('/api/v1/trace', { runId, type: 'tool.called', payload });
    assert.equal(appended.status, 201, `call ${i}: ${JSON.stringify(appended.body)}`);
    assert.equal(appended.body.seq, before + i + 1);
    assert.equal(appended.body.replayed, undefined);
  }
  const completed = await post('/api/v1/trace', { runId, type: 'tool.completed', payload: { name: 'refund', result: 1, idempotencyKey: 'refund-7' } });
  const again = await post('/api/v1/trace', { runId, type: 'tool.completed', payload: { name: 'refund', result: 2, idempotencyKey: 'refund-7' } });
  assert.deepEqual([completed.status, again.status], [201, 201]);
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.equal(detail.run.eventCount, before + 6);
  assert.equal(detail.events.at(-1).payload.idempotencyKey, 'refund-7', 'kept as sent');
});

test('trace: a tool.completed from the cache (cached: true) leaves a planned side effect planned, since the tool did not run; an uncached completion executes it', async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const append = async (type: string, payload: Record<string, unknown>) => assert.equal((await post('/api/v1/trace', { runId, type, payload })).status, 201);
  await append('side_effect.planned', { toolName: 'send', level: 3, payload: { to: 'ops' } });
  await append('tool.completed', { name: 'send', result: 'sent earlier', cached: true });
  assert.deepEqual((await get(`/api/v1/runs/${runId}`)).sideEffects.map((s: any) => s.state), ['planned']);
  await append('tool.completed', { name: 'send', result: 'sent', cached: false });
  assert.deepEqual((await get(`/api/v1/runs/${runId}`)).sideEffects.map((s: any) => s.state), ['executed']);
  assert.equal((await get(`/api/v1/runs/${runId}/integrity`)).ok, true);
});

test("trace: a tool.completed executes the oldest planned side effect of its tool, whatever idempotencyKey its extra fields note (data, not a key)", async (t) => {
  const { post, get, newRun } = await setup(t);
  const runId = await newRun();
  const append = async (type: string, payload: Record<string, unknown>) => assert.equal((await post('/api/v1/trace', { runId, type, payload })).status, 201);
  // A side effect planned without a key, its tool's completion noting one; one planned with a key, its completion
  // noting it padded (kept as sent, where the record's key was trimmed).
  await append('side_effect.planned', { toolName: 'send', level: 3, payload: { to: 'ops' } });
  await append('tool.completed', { name: 'send', result: 'sent', idempotencyKey: 'send-1' });
  await append('side_effect.planned', { toolName: 'mail', level: 3, payload: { to: 'ops' }, idempotencyKey: 'mail-1' });
  await append('tool.completed', { name: 'mail', result: 'mailed', idempotencyKey: ' mail-1 ' });
  const detail = await get(`/api/v1/runs/${runId}`);
  assert.deepEqual(
    detail.sideEffects.map((s: any) => [s.toolName, s.idempotencyKey, s.state]),
    [['send', null, 'executed'], ['mail', 'mail-1', 'executed']],
  );
});
