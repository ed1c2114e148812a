/** SPEC 4.9 run detail: its side effects and feedback are bounded windows (newest first kept), with totals and paging. */
import assert from 'node:assert/strict';
import test from 'node:test';
import { bearer, build, json, newChatRun } from '../support/build.ts';
import { recording } from '../support/counting-store.ts';

const BOOT = 'bootstrap-token-detail-window-0001';
const admin = bearer(BOOT);

async function setup(t: any) {
  const built = await build(t, { env: { SVC_API_KEY: BOOT } });
  const post = async (url: string, payload: unknown) => {
    const response = await built.app.inject({ method: 'POST', url, payload: payload as any, headers: admin });
    assert.ok(response.statusCode < 300, response.body);
    return json(response);
  };
  const get = async (url: string) => built.app.inject({ url, headers: admin });
  const runId = await newChatRun(built.app, admin);
  const plan = (i: number, bytes = 10) => post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 2, payload: { pad: 'x'.repeat(bytes) } } });
  return { get, post, runId, plan };
}

test('run detail: the newest 50 side effects and feedback records with their totals; older ones page with *Before', async (t) => {
  const { get, post, runId, plan } = await setup(t);
  for (let i = 1; i <= 60; i++) await plan(i);
  for (let i = 1; i <= 55; i++) await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: (i % 5) + 1, correction: `c${i}` });

  const detail = json(await get(`/api/v1/runs/${runId}`));
  assert.equal(detail.sideEffects.length, 50);
  assert.deepEqual(detail.sideEffects.map((s: any) => s.toolName).slice(0, 2), ['tool11', 'tool12'], 'the newest, in append order');
  assert.equal(detail.sideEffects.at(-1).toolName, 'tool60');
  assert.deepEqual(detail.sideEffectWindow, { limit: 50, count: 50, total: 60, hasMore: true, nextBefore: detail.sideEffects[0].seq, truncatedByBytes: false });
  assert.equal(detail.feedback.length, 50);
  assert.equal(detail.feedback[0].correction, 'c6');
  assert.deepEqual(detail.feedbackWindow, { limit: 50, count: 50, total: 55, hasMore: true, nextBefore: 6, truncatedByBytes: false });

  const older = json(await get(`/api/v1/runs/${runId}?sideEffectBefore=${detail.sideEffectWindow.nextBefore}&feedbackBefore=6&sideEffectLimit=500`));
  assert.deepEqual(older.sideEffects.map((s: any) => s.toolName), Array.from({ length: 10 }, (_, i) => `tool${i + 1}`));
  assert.equal(older.sideEffectWindow.hasMore, false);
  assert.equal(older.sideEffectWindow.nextBefore, null);
  assert.deepEqual(older.feedback.map((f: any) => f.correction), ['c1', 'c2', 'c3', 'c4', 'c5']);
  assert.deepEqual(older.feedbackWindow, { limit: 50, count: 5, total: 55, hasMore: false, nextBefore: null, truncatedByBytes: false });

  const small = json(await get(`/api/v1/runs/${runId}?sideEffectLimit=1&feedbackLimit=2`));
  assert.deepEqual(small.sideEffects.map((s: any) => s.toolName), ['tool60']);
  assert.deepEqual(small.feedback.map((f: any) => f.correction), ['c54', 'c55']);
});

test('run detail: side effects stop at 512 KiB of payload (at least one), as trace pages do', async (t) => {
  const { get, runId, plan } = await setup(t);
  for (let i = 1; i <= 4; i++) await plan(i, 200 * 1024);
  const detail = json(await get(`/api/v1/runs/${runId}`));
  assert.deepEqual(detail.sideEffects.map((s: any) => s.toolName), ['tool3', 'tool4']);
  assert.equal(detail.sideEffectWindow.truncatedByBytes, true);
  assert.equal(detail.sideEffectWindow.total, 4);
  assert.equal(detail.sideEffectWindow.hasMore, true);
  const one = json(await get(`/api/v1/runs/${runId}?sideEffectBefore=${detail.sideEffectWindow.nextBefore}&sideEffectLimit=1`));
  assert.deepEqual(one.sideEffects.map((s: any) => s.toolName), ['tool2']);
});

test('run detail: window parameters out of range are 400 invalid_request naming the parameter', async (t) => {
  const { get, runId } = await setup(t);
  for (const query of ['sideEffectLimit=0', 'sideEffectLimit=501', 'sideEffectLimit=x', 'sideEffectBefore=0', 'feedbackLimit=201', 'feedbackBefore=-1', 'feedbackLimit=1.5']) {
    const response = await get(`/api/v1/runs/${runId}?${query}`);
    assert.equal(response.statusCode, 400, query);
    const body = json(response);
    assert.equal(body.error.code, 'invalid_request', query);
    assert.match(body.error.message, new RegExp(query.split('=')[0]!), query);
  }
});

test('run detail reads only its windows of side effects and feedback, not every record the run holds', async (t) => {
  const watch = recording();
  const built = await build(t, { env: { SVC_API_KEY: BOOT }, wrapStore: watch.wrap });
  const runId = await newChatRun(built.app, admin);
  const post = (url: string, payload: unknown) => built.app.inject({ method: 'POST', url, payload: payload as any, headers: admin });
  for (let i = 1; i <= 30; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 2, payload: {} } });
  for (let i = 1; i <= 30; i++) await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 5, correction: `c${i}` });
  const queries = ['sideEffectLimit=5&feedbackLimit=5'];
  for (const query of queries) {
    watch.start();
    const detail = json(await built.app.inject({ url: `/api/v1/runs/${runId}?${query}`, headers: admin }));
    // Then the older windows.
    if (queries.length === 1) queries.push(`sideEffectLimit=5&sideEffectBefore=${detail.sideEffectWindow.nextBefore}&feedbackLimit=5&feedbackBefore=${detail.feedbackWindow.nextBefore}`);
    const reads = watch.stop().filter((read) => /run_side_effects|run_feedback/.test(read.text));
    assert.equal(detail.sideEffects.length, 5);
    assert.equal(detail.sideEffectWindow.total, 30);
    assert.equal(detail.feedback.length, 5);
    assert.equal(detail.feedbackWindow.total, 30);
    assert.ok(reads.length > 0);
    // A window of 5 reads at most 6 records (one more tells whether older ones are left) and counts the rest.
    for (const read of reads) assert.match(read.text, /LIMIT|COUNT\(\*\)/, `${query}: ${read.text}`);
  }
});
