/**
 * The evidence packet of a run with many records: read a page at a time and sent in slices (docs/evidence.md,
 * "Large runs"), yet the same document: the text JSON.stringify gives of what the service builds, every record in
 * order across page boundaries, scoped to the caller's tenant and app.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import { overriding } from '../support/counting-store.ts';
import { objectOf } from '../../src/core/json-slices.ts';
import type { AuthContext } from '../../src/identity/auth-context.ts';
import type { SqlParams } from '../../src/store/sql.ts';
import type { Store } from '../../src/store/store.ts';
import { bearer, build, json, newChatRun } from '../support/build.ts';

const BOOT = 'bootstrap-token-packet-slices-0001';
const admin = bearer(BOOT);
const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
// The bootstrap token's identity, as the service sees it.
const operator = { kind: 'bootstrap', tenantId: 'default', admin: true, tenantWide: true, platformAdmin: true, appId: null, agent: null, subject: null } as unknown as AuthContext;

async function setup(t: any, wrapStore?: (store: Store) => Store) {
  // A fixed clock, so that the packet's generatedAt and checkedAt are the same in two reads.
  const warnings: string[] = [];
  const log = { warn: (message: string, error?: unknown) => void warnings.push(`${message}: ${error instanceof Error ? error.message : String(error)}`) };
  const built = await build(t, { env: { SVC_API_KEY: BOOT, SVC_RATE_LIMIT_API_PER_MINUTE: '100000' }, overrides: { clock: { now: () => NOW }, log }, ...(wrapStore ? { wrapStore } : {}) });
  const post = async (url: string, payload: unknown, headers = admin) => {
    const response = await built.app.inject({ method: 'POST', url, payload: payload as any, headers });
    assert.ok(response.statusCode < 300, response.body);
    return json(response);
  };
  return { ...built, post, warnings };
}

test('evidence packet of a run with pages of records: JSON.stringify\'s text of the packet, every record in order', async (t) => {
  const { app, services, post } = await setup(t);
  const runId = await newChatRun(app, admin);
  // 32 side effects (two full pages of 16, then an empty one) and 35 feedback records (a short third page).
  for (let i = 1; i <= 32; i++) {
    await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 2, payload: { n: i, text: `"quoted" \u00e9 ${'x'.repeat(i * 100)}` } } });
  }
  await post('/api/v1/trace', { runId, type: 'side_effect.executed', payload: { toolName: 'tool17', reason: 'sent' } });
  for (let i = 1; i <= 35; i++) await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: (i % 5) + 1, correction: `c${i}` });

  const response = await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin });
  assert.equal(response.statusCode, 200);
  assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(response.headers['content-disposition'], `attachment; filename="evidence-${runId}.json"`);
  assert.equal(response.body, JSON.stringify(await objectOf(await services.runs.evidencePacket(operator, runId))));

  const bundle = await app.inject({ url: `/api/v1/runs/${runId}/replay-bundle`, headers: admin });
  assert.equal(bundle.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(bundle.body, JSON.stringify(await services.runs.replayBundle(operator, runId)));

  const packet = json(response);
  assert.deepEqual(packet.sideEffects.map((effect: any) => effect.toolName), Array.from({ length: 32 }, (_, i) => `tool${i + 1}`));
  assert.deepEqual(packet.sideEffects.map((effect: any) => effect.payload.n), Array.from({ length: 32 }, (_, i) => i + 1));
  assert.equal(packet.sideEffects[16].state, 'executed');
  assert.equal(packet.sideEffects[16].reason, 'sent');
  assert.deepEqual(packet.feedback.map((record: any) => record.correction), Array.from({ length: 35 }, (_, i) => `c${i + 1}`));
  assert.equal(packet.events.length, packet.integrity.eventCount);
  assert.equal(packet.integrity.ok, true);
});

test('evidence packet of a large run: scoped to its tenant and app; another app\'s key gets 404 and none of it', async (t) => {
  const { app, post } = await setup(t);
  const runId = await newChatRun(app, { ...admin, 'x-svc-app': 'billing' });
  for (let i = 1; i <= 20; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `secret${i}`, level: 1, payload: {} } });
  const pinned = bearer((await post('/api/v1/keys', { name: 'pinned', appId: 'support' })).token);
  const refused = await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: pinned });
  assert.equal(refused.statusCode, 404);
  assert.equal(json(refused).error.message, 'Run not found.');
  assert.doesNotMatch(refused.body, /secret/);
  const owner = bearer((await post('/api/v1/keys', { name: 'billing', appId: 'billing' })).token);
  const allowed = json(await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: owner }));
  assert.equal(allowed.sideEffects.length, 20);
});

/** The store, with reads of the tables named in `fail` failing and the rows read from run_events counted. */
function instrumented() {
  const state = { eventRows: 0, fail: null as RegExp | null };
  const wrap = (store: Store) =>
    overriding(store, {
      read: (inner) => (fn) =>
        inner.read((sql) =>
          fn({
            ...sql,
            run: (text, params) => sql.run(text, params),
            get: (text, params) => {
              if (state.fail?.test(text)) throw new Error('disk I/O error');
              return sql.get(text, params);
            },
            all: <T,>(text: string, params?: SqlParams) => {
              if (state.fail?.test(text)) throw new Error('disk I/O error');
              const rows = sql.all<T>(text, params);
              if (/FROM run_events\b/.test(text)) state.eventRows += rows.length;
              return rows;
            },
          }),
        ),
    });
  return { state, wrap };
}

test('a read that fails after the packet\'s first byte aborts the response: the client gets a truncated body, never a whole-looking 200', async (t) => {
  // The feedback is read after the side effects are written: once the text before it exceeds a slice, a failed
  // feedback read comes after the status and first bytes are sent.
  const { state, wrap } = instrumented();
  const { app, post } = await setup(t, wrap);
  const runId = await newChatRun(app, admin);
  for (let i = 1; i <= 40; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 1, payload: { pad: 'x'.repeat(4096) } } });
  await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 5 });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/runs/${runId}/evidence-packet`;

  state.fail = /FROM run_feedback\b/;
  const response = await fetch(url, { headers: admin });
  assert.equal(response.status, 200);
  await assert.rejects(response.text(), (error: Error) => /terminated/.test(error.message) || /terminated|closed|aborted/i.test(String(error.cause)));

  // The same run's packet whole once the reads succeed; and a failure before the first byte is still an error answer.
  state.fail = null;
  const whole = await fetch(url, { headers: admin });
  assert.equal(((await whole.json()) as { feedback: unknown[] }).feedback.length, 1);
});

test('the replay bundle\'s stored request is spliced into the bundle and the packet as stored, never parsed: the same text', async (t) => {
  const { app, services } = await setup(t);
  // A request of ~600 KiB: emoji (surrogate pairs) across every slice boundary, escapes, line separators.
  const content = `hello ${process.hrtime.bigint()} "quoted" \u2028 \u0001 ${'\u{1F600}\u00e9 '.repeat(150_000)}`;
  const payload = { model: 'gpt-4o-mini', messages: [{ role: 'user', content }], metadata: { '2': 'integer-like', a: 'b' }, temperature: 0.1 };
  const chat = await app.inject({ method: 'POST', url: '/v1/chat/completions', headers: admin, payload });
  assert.equal(chat.statusCode, 200);
  const runId = String(chat.headers['x-svc-run-id']);

  const parse = JSON.parse;
  const parsedLengths: number[] = [];
  JSON.parse = ((text: string, reviver?: never) => {
    parsedLengths.push(String(text).length);
    return parse(text, reviver);
  }) as typeof JSON.parse;
  let bundle, packet;
  try {
    bundle = await app.inject({ url: `/api/v1/runs/${runId}/replay-bundle`, headers: admin });
    packet = await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin });
  } finally {
    JSON.parse = parse;
  }
  assert.deepEqual(parsedLengths.filter((length) => length > 100_000), [], 'the stored request was parsed');
  assert.equal(bundle.statusCode, 200);
  assert.equal(bundle.body, JSON.stringify(await services.runs.replayBundle(operator, runId)));
  assert.equal(packet.body, JSON.stringify(await objectOf(await services.runs.evidencePacket(operator, runId))));
  assert.deepEqual(json(bundle).request, payload);
  assert.deepEqual(json(packet).replayBundle, json(bundle));
});

test('the packet reads its trace once: each event is read, verified and written in one pass, the verdict after them', async (t) => {
  const { state, wrap } = instrumented();
  const { app, post } = await setup(t, wrap);
  const runId = await newChatRun(app, admin);
  for (let i = 1; i <= 40; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 1, payload: { i } } });
  state.eventRows = 0;
  const response = await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin });
  assert.equal(response.statusCode, 200);
  const packet = json(response);
  assert.equal(packet.integrity.ok, true);
  assert.equal(packet.events.length, packet.integrity.eventCount);
  assert.ok(packet.events.length > 40);
  assert.equal(state.eventRows, packet.events.length, 'trace rows read for one packet');
});

test('a replay bundle that cannot be read leaves the packet whole: replayBundle null, with the reason, rather than an aborted response', async (t) => {
  const { state, wrap } = instrumented();
  const { app, warnings } = await setup(t, wrap);
  const runId = await newChatRun(app, admin);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1/runs/${runId}/evidence-packet`;

  state.fail = /FROM run_replays\b/;
  const response = await fetch(url, { headers: admin });
  assert.equal(response.status, 200);
  const packet = (await response.json()) as Record<string, unknown>;
  assert.equal(packet.replayBundle, null);
  assert.equal(packet.replayBundleError, 'the replay bundle could not be read');
  assert.doesNotMatch(JSON.stringify(packet), /disk I\/O error/, 'the store\'s error is not echoed');
  assert.ok(Array.isArray(packet.events) && packet.events.length > 0);
  assert.deepEqual(warnings, [`reading the replay bundle of run ${runId} for its evidence packet failed: disk I/O error`], 'the operator is told, with the error');

  state.fail = null;
  const whole = (await (await fetch(url, { headers: admin })).json()) as Record<string, any>;
  assert.equal(whole.replayBundle.runId, runId);
  assert.equal(whole.replayBundleError, null);
  assert.equal(warnings.length, 1);
});

test('the packet is of the run as read before its first byte: events appended while it is written are left out, its verdict holds; events stored past the row\'s count are the data\'s and break it', async (t) => {
  const { app, services, post } = await setup(t);
  const runId = await newChatRun(app, admin);
  for (let i = 1; i <= 20; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 1, payload: { i } } });

  // The run is read; 20 events are appended before its text reaches the trace.
  const members = await services.runs.evidencePacket(operator, runId);
  for (let i = 21; i <= 40; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 1, payload: { i } } });
  const packet = (await objectOf(members)) as Record<string, any>;
  assert.equal(packet.events.length, packet.run.eventCount);
  assert.equal(packet.integrity.ok, true);
  assert.equal(packet.integrity.eventCount, packet.run.eventCount);
  assert.equal(packet.integrity.headHash, packet.events.at(-1).hash);

  // A row that counts fewer events than are stored, and did not move while the packet was written: the data's.
  const stored = (json(await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin })) as Record<string, any>).events.length;
  await services.store.flush();
  await services.store.write((sql) => sql.run('UPDATE runs SET event_count = event_count - 1 WHERE id = ?', [runId]));
  const edited = json(await app.inject({ url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin })) as Record<string, any>;
  const verdict = json(await app.inject({ url: `/api/v1/runs/${runId}/integrity`, headers: admin }));
  assert.equal(edited.events.length, stored);
  assert.equal(edited.integrity.ok, false);
  assert.deepEqual({ ...edited.integrity, checkedAt: null }, { ...verdict, checkedAt: null });
});

test('a run deleted while its packet is written (its trace reads short) fails the packet rather than end it short', async (t) => {
  const { app, services } = await setup(t);
  const runId = await newChatRun(app, admin);
  const members = await services.runs.evidencePacket(operator, runId);
  await services.store.flush();
  await services.store.write((sql) => {
    for (const table of ['run_events', 'run_attempts', 'run_replays']) sql.run(`DELETE FROM ${table} WHERE run_id = ?`, [runId]);
    sql.run('DELETE FROM runs WHERE id = ?', [runId]);
  });
  await assert.rejects(objectOf(members), (error: Error & { code?: string }) => error.code === 'not_found');
});
