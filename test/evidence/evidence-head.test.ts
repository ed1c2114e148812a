/**
 * HEAD on the evidence packet and the replay bundle (docs/evidence.md, "Large runs"): the status and headers a GET
 * would answer (404 for a run the caller may not see, 401 without a key), without reading the run's trace, records or
 * stored request, which a GET's packet (up to ~41 MiB) is built from.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import test from 'node:test';
import { recording } from '../support/counting-store.ts';
import { exchangeText } from '../support/raw-http.ts';
import { bearer, build, json, newChatRun } from '../support/build.ts';

const BOOT = 'bootstrap-token-evidence-head-0001';
const admin = bearer(BOOT);
/** Reads of the rows a packet's sections are made of: a HEAD reads none (a replay bundle's HEAD asks only whether one exists). */
const SECTION_TABLES = /\bSELECT \* FROM (run_events|run_side_effects|run_feedback|run_replays|run_attempts|audit_events)\b/;

async function setup(t: any) {
  const watch = recording();
  const built = await build(t, { env: { SVC_API_KEY: BOOT, SVC_RATE_LIMIT_API_PER_MINUTE: '100000' }, wrapStore: watch.wrap });
  const post = async (url: string, payload: unknown, headers = admin) => {
    const response = await built.app.inject({ method: 'POST', url, payload: payload as any, headers });
    assert.ok(response.statusCode < 300, response.body);
    return json(response);
  };
  const runId = await newChatRun(built.app, { ...admin, 'x-svc-app': 'billing' });
  for (let i = 1; i <= 20; i++) await post('/api/v1/trace', { runId, type: 'side_effect.planned', payload: { toolName: `tool${i}`, level: 1, payload: { n: i } } });
  await post(`/api/v1/runs/${runId}/feedback`, { type: 'rating', rating: 5 });
  return { ...built, watch, post, runId };
}

test('HEAD on the evidence packet and replay bundle: GET\'s status and headers, none of the sections read', async (t) => {
  const { app, watch, post, runId } = await setup(t);
  const pinned = bearer((await post('/api/v1/keys', { name: 'pinned', appId: 'support' })).token);
  for (const resource of ['evidence-packet', 'replay-bundle']) {
    const url = `/api/v1/runs/${runId}/${resource}`;
    const get = await app.inject({ url, headers: admin });
    assert.equal(get.statusCode, 200);
    watch.start();
    const head = await app.inject({ method: 'HEAD', url, headers: admin });
    const reads = watch.stop().filter((read) => SECTION_TABLES.test(read.text));
    assert.equal(head.statusCode, 200, resource);
    assert.equal(head.body, '');
    assert.equal(head.headers['content-type'], get.headers['content-type']);
    assert.equal(head.headers['content-disposition'], get.headers['content-disposition']);
    assert.deepEqual(reads.map((read) => read.text), [], `${resource}: a HEAD read the run's sections`);

    // The same refusals as GET: another app's key, a run that does not exist, no key.
    for (const [label, target, headers] of [
      ['another app', url, pinned],
      ['missing run', `/api/v1/runs/run_doesnotexist/${resource}`, admin],
      ['no key', url, {}],
    ] as const) {
      const refusedGet = await app.inject({ url: target, headers });
      const refusedHead = await app.inject({ method: 'HEAD', url: target, headers });
      assert.ok(refusedGet.statusCode >= 400, `${resource} ${label}`);
      // Its body: inject's stand-in response keeps what node leaves off a HEAD's answer on the wire (light-my-request
      // 6.6, package.json's override), so the bytes a client gets are checked over a real socket below.
      assert.equal(refusedHead.statusCode, refusedGet.statusCode, `${resource} ${label}`);
    }
  }
});

test('HEAD on the replay bundle of a run without one is GET\'s 404', async (t) => {
  const { app, post } = await setup(t);
  const { runId } = await post('/api/v1/ingest/prompt', { source: 'sdk', prompt: 'hello' });
  const url = `/api/v1/runs/${runId}/replay-bundle`;
  assert.equal((await app.inject({ url, headers: admin })).statusCode, 404);
  assert.equal((await app.inject({ method: 'HEAD', url, headers: admin })).statusCode, 404);
  // The packet of such a run exists (its replayBundle is null).
  assert.equal((await app.inject({ method: 'HEAD', url: `/api/v1/runs/${runId}/evidence-packet`, headers: admin })).statusCode, 200);
});

test('HEAD on the evidence packet over a real socket: headers only, then a GET gets the whole packet', async (t) => {
  const { app, watch, runId } = await setup(t);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  watch.start();
  const head = await fetch(`${base}/api/v1/runs/${runId}/evidence-packet`, { method: 'HEAD', headers: admin });
  const reads = watch.stop().filter((read) => SECTION_TABLES.test(read.text));
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('content-disposition'), `attachment; filename="evidence-${runId}.json"`);
  assert.equal(await head.text(), '');
  assert.deepEqual(reads.map((read) => read.text), []);
  // A refused HEAD's answer on the wire: GET's status and headers, no body.
  const port = (app.server.address() as AddressInfo).port;
  for (const [target, authorization] of [[`/api/v1/runs/run_nope/evidence-packet`, `authorization: ${admin.authorization}\r\n`], [`/api/v1/runs/${runId}/evidence-packet`, '']] as const) {
    const text = await exchangeText(port, `HEAD ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\n${authorization}connection: close\r\n\r\n`);
    const [head = '', body] = text.split('\r\n\r\n', 2);
    assert.match(head, authorization ? /^HTTP\/1\.1 404 / : /^HTTP\/1\.1 401 /, target);
    assert.match(head, /\r\ncontent-type: application\/json/i, target);
    assert.equal(body, '', target);
  }
  const get = await fetch(`${base}/api/v1/runs/${runId}/evidence-packet`, { headers: admin });
  assert.equal(get.status, 200);
  assert.equal(((await get.json()) as { sideEffects: unknown[] }).sideEffects.length, 20);
});
