/** SPEC 4.9 run sub-resources: economics, receipt, replay bundle, evidence packet; scoping of each. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json } from '../support/build.ts';
import { overriding } from '../support/counting-store.ts';
import { sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';
import { costOf } from '../../src/gateway/pricing.ts';
import type { Sql, SqlParams } from '../../src/store/sql.ts';
import type { Store } from '../../src/store/store.ts';

const BOOT = 'bootstrap-token-evidence-tests-0001';
const admin = bearer(BOOT);

let counter = 0;
function fresh(extra: Record<string, unknown> = {}) {
  counter += 1;
  return { model: 'gpt-4o-mini', messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: `q${counter} ${process.hrtime.bigint()}` }], ...extra };
}

async function setup(t: any) {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const chat = async (payload: unknown, headers: Record<string, string> = admin) => {
    const response = await (built.app as any).inject({ method: "POST", url: "/v1/chat/completions", payload, headers });
    assert.equal(response.statusCode, 200, response.body);
    return response;
  };
  const get = async (url: string, headers: Record<string, string> = admin) => built.app.inject({ url, headers });
  return { ...built, chat, get };
}

test('economics of a live run and of the cache hit that followed it', async (t) => {
  const { chat, get } = await setup(t);
  const body = fresh();
  const live = await chat(body);
  const hit = await chat(body);
  assert.equal(hit.headers['x-svc-route'], 'exact_cache');

  const liveEconomics = json((await get(`/api/v1/runs/${live.headers['x-svc-run-id']}/economics`)));
  assert.equal(liveEconomics.route, 'live');
  assert.equal(liveEconomics.attempts.served.length, 1);
  assert.deepEqual(liveEconomics.attempts.shadow, []);
  assert.deepEqual(liveEconomics.attempts.evaluator, []);
  assert.deepEqual(liveEconomics.tokens.actual, liveEconomics.tokens.customer);
  assert.ok(liveEconomics.tokens.actual.totalTokens > 0);
  assert.equal(liveEconomics.reference.source, 'served attempts');
  assert.equal(liveEconomics.reference.costUsd, liveEconomics.cost.providerUsd);
  assert.equal(liveEconomics.savings.usd, 0);

  const hitEconomics = json(await get(`/api/v1/runs/${hit.headers['x-svc-run-id']}/economics`));
  assert.equal(hitEconomics.route, 'exact_cache');
  assert.equal(hitEconomics.attempts.served.length, 0);
  assert.equal(hitEconomics.tokens.actual.totalTokens, 0, 'no provider ran');
  assert.equal(hitEconomics.tokens.customer.totalTokens, liveEconomics.tokens.customer.totalTokens, 'the caller sees the original usage');
  assert.equal(hitEconomics.cost.providerUsd, 0);
  assert.equal(hitEconomics.reference.costUsd, liveEconomics.cost.providerUsd);
  assert.match(hitEconomics.reference.source, new RegExp(String(live.headers['x-svc-run-id'])));
  assert.equal(hitEconomics.savings.usd, liveEconomics.cost.providerUsd);
});

test("a cache hit's reference cost is what its stored answer cost, not its source run's: a billed failed attempt before the fallback that answered is not saved again", async (t) => {
  // The primary bills a failed answer (a response whose status is failed, with its usage); the fallback answers; the answer is stored.
  const failedUsage = { input_tokens: 4000, output_tokens: 1000, total_tokens: 5000 };
  const primary = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, { id: 'resp_up', object: 'response', created_at: 1, status: 'failed', model: 'gpt-4o-mini', output: [], usage: failedUsage, error: { code: 'server_error', message: 'boom' } }),
  );
  const fallback = await startFakeUpstream(t, (_req, res) =>
    sendJson(res, 200, {
      id: 'resp_fb', object: 'response', created_at: 1, status: 'completed', model: 'gpt-4o-mini',
      output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'from the fallback', annotations: [] }] }],
      usage: { input_tokens: 100, output_tokens: 20, total_tokens: 120 },
    }),
  );
  const { app } = await build(t, {
    env: { SVC_API_KEY: BOOT, CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: primary.baseUrl, CHATCOMP_FALLBACK_API_KEY: 'sk-fallback', CHATCOMP_FALLBACK_BASE_URL: fallback.baseUrl },
  });
  const ask = () => app.inject({ method: 'POST', url: '/v1/responses', headers: admin, payload: { model: 'gpt-4o-mini', input: 'billed twice?' } });
  const source = await ask();
  assert.equal(source.statusCode, 200, source.body);
  const hit = await ask();
  assert.equal(hit.headers['x-svc-route'], 'exact_cache');

  const sourceEconomics = json(await app.inject({ url: `/api/v1/runs/${source.headers['x-svc-run-id']}/economics`, headers: admin }));
  const failedCost = costOf('gpt-4o-mini', { promptTokens: 4000, completionTokens: 1000 }, false).usd;
  const answerCost = costOf('gpt-4o-mini', { promptTokens: 100, completionTokens: 20 }, false).usd;
  assert.deepEqual(sourceEconomics.attempts.served.map((attempt: any) => [attempt.outcome, attempt.costUsd]), [['failed', failedCost], ['success', answerCost]]);
  assert.equal(sourceEconomics.cost.providerUsd, Math.round((failedCost + answerCost) * 1e9) / 1e9, "the source run's cost holds the billed failure");

  const hitEconomics = json(await app.inject({ url: `/api/v1/runs/${hit.headers['x-svc-run-id']}/economics`, headers: admin }));
  assert.equal(hitEconomics.reference.source, `source run ${source.headers['x-svc-run-id']}`);
  assert.equal(hitEconomics.reference.costUsd, answerCost, 'the stored answer cost only the attempt that produced it');
  assert.equal(hitEconomics.savings.usd, answerCost);
});

test('receipts: 404 with a clear message when the run has none; 404 for unknown runs', async (t) => {
  const { chat, get } = await setup(t);
  const runId = String((await chat(fresh())).headers['x-svc-run-id']);
  for (const url of [`/api/v1/runs/${runId}/receipt`, `/api/v1/receipts/${runId}`]) {
    const response = await get(url);
    assert.equal(response.statusCode, 404);
    assert.match(json(response).error.message, /no receipt/);
  }
  const unknown = await get('/api/v1/receipts/run_does_not_exist');
  assert.equal(unknown.statusCode, 404);
  assert.match(json(unknown).error.message, /Run not found/);
});

test('replay bundle: the request, its identity, the route inputs and the response hash', async (t) => {
  const { chat, get } = await setup(t);
  const payload = fresh({ temperature: 0.2 });
  const response = await chat(payload, { ...admin, 'x-svc-cache-bypass': 'true' });
  const bundle = json(await get(`/api/v1/runs/${response.headers['x-svc-run-id']}/replay-bundle`));
  assert.equal(bundle.format, 'svc.replay-bundle');
  assert.equal(bundle.wire, 'chat_completions');
  assert.deepEqual(bundle.request, payload);
  assert.match(bundle.identity.exactCacheKey, /^chat_completions:[0-9a-f]{64}$/);
  assert.equal(bundle.routeInputs.cacheControls.serve, false);
  assert.equal(bundle.routeInputs.cacheControls.control, 'x-svc-cache-bypass: true');
  assert.equal(bundle.routeInputs.mode, 'optimize');
  assert.ok(bundle.routeInputs.candidates.length >= 1);
  assert.equal(bundle.routeDecision.route, 'live');
  assert.match(bundle.responseHash, /^[0-9a-f]{64}$/);

  const { createHash } = await import('node:crypto');
  const { canonicalJson } = await import('../../src/core/canonical-json.ts');
  assert.equal(bundle.responseHash, createHash('sha256').update(canonicalJson(json(response))).digest('hex'), 'hash of the answer served');
});

test('streamed runs keep a replay bundle whose hash covers the assembled answer', async (t) => {
  const { app, get } = await setup(t);
  const response = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: fresh({ stream: true }), headers: admin });
  assert.equal(response.statusCode, 200);
  const bundle = json(await get(`/api/v1/runs/${response.headers['x-svc-run-id']}/replay-bundle`));
  assert.equal(bundle.request.stream, true);
  assert.match(bundle.responseHash, /^[0-9a-f]{64}$/);
});

test('evidence packet: one downloadable JSON document with everything about the run', async (t) => {
  const { app, chat, get } = await setup(t);
  const runId = String((await chat(fresh())).headers['x-svc-run-id']);
  await app.inject({ method: 'POST', url: '/api/v1/trace', headers: admin, payload: { runId, type: 'side_effect.planned', payload: { toolName: 'send_email', level: 3, payload: { to: 'a@example.com' }, idempotencyKey: 'mail-1' } } });
  await app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/feedback`, headers: admin, payload: { type: 'rating', rating: 5 } });

  const response = await get(`/api/v1/runs/${runId}/evidence-packet`);
  assert.equal(response.statusCode, 200);
  assert.match(String(response.headers['content-disposition']), new RegExp(`attachment; filename="evidence-${runId}.json"`));
  const packet = json(response);
  assert.equal(packet.format, 'svc.evidence-packet');
  assert.equal(packet.run.id, runId);
  assert.equal(packet.routeExplanation.route, 'live');
  assert.equal(packet.integrity.ok, true);
  assert.equal(packet.integrity.eventCount, packet.events.length);
  assert.equal(packet.replayBundle.runId, runId);
  assert.equal(packet.sideEffects.length, 1);
  assert.equal(packet.sideEffects[0].state, 'planned');
  assert.equal(packet.feedback.length, 1);
  assert.ok(Array.isArray(packet.audit));
  assert.equal(packet.chorus, null);
  assert.ok(packet.events.some((event: any) => event.type === 'side_effect.planned'));
  assert.equal(packet.economics.runId, runId);
});

test('every run sub-resource is tenant and app scoped: another app key gets 404', async (t) => {
  const { app, chat, get } = await setup(t);
  const runId = String((await chat(fresh(), { ...admin, 'x-svc-app': 'billing' })).headers['x-svc-run-id']);
  const created = json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'pinned', appId: 'support' } }));
  const pinned = bearer(created.token);
  for (const path of ['economics', 'receipt', 'replay-bundle', 'evidence-packet', 'integrity', 'route', 'events']) {
    const response = await get(`/api/v1/runs/${runId}/${path}`, pinned);
    assert.equal(response.statusCode, 404, path);
    assert.match(json(response).error.message, /Run not found/, path);
  }
  const trace = await app.inject({ method: 'POST', url: '/api/v1/trace', headers: pinned, payload: { runId, type: 'tool.called', payload: { name: 'x', args: {}, sideEffectLevel: 0 } } });
  assert.equal(trace.statusCode, 404);
  const feedback = await app.inject({ method: 'POST', url: `/api/v1/runs/${runId}/feedback`, headers: pinned, payload: { type: 'rating', rating: 5 } });
  assert.equal(feedback.statusCode, 404);
});

test("a receipt is the run's last chorus.receipt event, read alone: not the run's whole trace", async (t) => {
  // The trace events each read returns.
  let eventsRead = 0;
  const counted = (sql: Sql): Sql => ({
    secureDelete: (on) => sql.secureDelete(on),
    run: (text, params) => sql.run(text, params),
    get: <T>(text: string, params?: SqlParams) => {
      const row = sql.get<T>(text, params);
      if (/\brun_events\b/.test(text) && row !== undefined) eventsRead += 1;
      return row;
    },
    all: <T>(text: string, params?: SqlParams) => {
      const rows = sql.all<T>(text, params);
      if (/\brun_events\b/.test(text)) eventsRead += rows.length;
      return rows;
    },
  });
  const wrapStore = (inner: Store): Store => overriding(inner, { read: (store) => (fn) => store.read((sql) => fn(counted(sql))) });
  const { services, app } = await build(t, { env: { SVC_API_KEY: BOOT }, wrapStore });
  const recorder = services.ledger.start(runStart());
  recorder.event('chorus.receipt', { verdict: 'first' });
  const last = recorder.event('chorus.receipt', { verdict: 'second' });
  for (let i = 0; i < 500; i++) recorder.event('tool.completed', { name: 'x', result: 'r'.repeat(1000) });
  await services.store.flush();

  eventsRead = 0;
  const response = await app.inject({ url: `/api/v1/receipts/${recorder.id}`, headers: admin });
  assert.equal(response.statusCode, 200, response.body);
  assert.deepEqual(json(response), { runId: recorder.id, receipt: { verdict: 'second' }, eventSeq: last.seq, eventHash: last.hash });
  assert.equal(eventsRead, 1, 'the receipt event alone');
});

test("a receipt is answered only as its run's chain hashed it: one edited in the data file is refused, one stored past the run's recorded events is not the run's", async (t) => {
  const { services, app } = await build(t, { env: { SVC_API_KEY: BOOT } });
  const receiptRun = async () => {
    const recorder = services.ledger.start(runStart());
    const event = recorder.event('chorus.receipt', { answerHash: 'a'.repeat(64), verdict: 'supported' });
    recorder.finish(completedOutcome());
    await services.store.flush();
    return { runId: recorder.id, seq: event.seq };
  };
  const receipt = (runId: string) => app.inject({ url: `/api/v1/runs/${runId}/receipt`, headers: admin });

  const untouched = await receiptRun();
  assert.equal((await receipt(untouched.runId)).statusCode, 200);

  const edited = await receiptRun();
  await services.store.write((sql) => sql.run(`UPDATE run_events SET payload_json = '{"answerHash":"${'b'.repeat(64)}","verdict":"supported"}' WHERE run_id = ? AND seq = ?`, [edited.runId, edited.seq]));
  const refused = await receipt(edited.runId);
  assert.equal(refused.statusCode, 409, refused.body);
  assert.equal(json(refused).error.code, 'conflict');
  assert.doesNotMatch(refused.body, /bbbb/, 'the edited receipt is not answered');
  assert.equal((await app.inject({ url: `/api/v1/receipts/${edited.runId}`, headers: admin })).statusCode, 409);

  const { runId: forgedRun, seq: chainedSeq } = await receiptRun();
  // A receipt added after the run's last recorded event, its hash copied from the real one: no append chained it.
  await services.store.write((sql) =>
    sql.run(`INSERT INTO run_events (run_id, seq, type, payload_json, created_at, prev_hash, hash) SELECT run_id, 99, type, '{"verdict":"forged"}', created_at, prev_hash, hash FROM run_events WHERE run_id = ? AND type = 'chorus.receipt'`, [forgedRun]),
  );
  const forged = await receipt(forgedRun);
  assert.equal(forged.statusCode, 200, forged.body);
  assert.deepEqual([json(forged).eventSeq, json(forged).receipt.verdict], [chainedSeq, 'supported'], 'the receipt the chain holds, not the one after it');

  // Another run's receipt replayed as this one's, linked where this run's stood: its hash was computed over its own run.
  const replayed = await receiptRun();
  await services.store.write((sql) =>
    sql.run(
      `UPDATE run_events SET (payload_json, created_at, hash) = (SELECT payload_json, created_at, hash FROM run_events WHERE run_id = ? AND seq = ?) WHERE run_id = ? AND seq = ?`,
      [untouched.runId, untouched.seq, replayed.runId, replayed.seq],
    ),
  );
  assert.equal((await receipt(replayed.runId)).statusCode, 409);
});
