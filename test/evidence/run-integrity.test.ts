/**
 * `GET /api/v1/runs/:id/integrity` holds a finished run's row to the outcome hashed into its chain
 * (src/evidence/run-integrity.ts): an edit of an outcome column in the data file is reported at the closing event,
 * for runs finished by a request and runs finished at start-up as interrupted; a running run verifies as it stands.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import test, { type TestContext } from 'node:test';
import { linkedEvent } from '../../src/evidence/chain.ts';
import { createRunsService } from '../../src/evidence/service.ts';
import { createRunsRepository, type RunsRepository } from '../../src/evidence/repo.ts';
import type { AuthContext } from '../../src/identity/auth-context.ts';
import type { SqlValue } from '../../src/store/sql.ts';
import { build, json, type Built } from '../support/build.ts';
import { completion, contentChunk, sendChunks, sendJson, startFakeUpstream } from '../support/fake-upstream.ts';
import { loadScaled } from '../support/load-scaled.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';

let counter = 0;

async function chat(built: Built, model = 'gpt-4o-mini') {
  counter += 1;
  const payload = { model, messages: [{ role: 'user', content: `integrity ${counter} ${process.hrtime.bigint()}` }] };
  return built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload });
}

async function runOf(built: Built, model?: string): Promise<string> {
  return String((await chat(built, model)).headers['x-svc-run-id']);
}

const integrity = async (built: Built, runId: string) => json(await built.app.inject({ url: `/api/v1/runs/${runId}/integrity` }));

/** The run's stored trace, oldest first. */
const eventsOf = async (built: Built, runId: string) =>
  json(await built.app.inject({ url: `/api/v1/runs/${runId}/events?limit=500` })).events as Array<{ seq: number; type: string; hash: string }>;

/** Edit the run's row in the data file, once its writes are committed (as someone with the file would). */
async function edit(built: Built, runId: string, assignment: string, params: SqlValue[] = []): Promise<void> {
  await built.services.store.flush();
  const changed = await built.services.store.write((sql) => sql.run(`UPDATE runs SET ${assignment} WHERE id = ?`, [...params, runId]).changes);
  assert.equal(changed, 1, assignment);
}

/** Assert the run fails integrity at its closing event, `column` named as the field that disagrees. */
async function assertBrokenAt(built: Built, runId: string, column: string, closingType: string) {
  const events = await eventsOf(built, runId);
  const closing = events.find((event) => event.type === closingType);
  assert.ok(closing, `the run has a ${closingType} event`);
  const verdict = await integrity(built, runId);
  assert.equal(verdict.ok, false, `${column}: ${JSON.stringify(verdict)}`);
  assert.equal(verdict.reason, `the run's ${column} does not match its hashed ${closingType} event`);
  assert.equal(verdict.brokenAt, closing.seq);
  assert.equal(verdict.eventCount, events.length, 'the chain itself still verifies to its end');
  return verdict;
}

test('a run finished through the gateway verifies; an edit of any outcome column of its row is reported at its run.completed event', async (t) => {
  const built = await build(t);
  const untouched = await runOf(built);
  const verified = await integrity(built, untouched);
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal(verified.reason, null);

  const edits: Array<[column: string, assignment: string]> = [
    ['cost_usd', 'cost_usd = 0.25'],
    ['status', "status = 'failed'"],
    // A finished run passed off as still running: its closing event gives it away.
    ['status', "status = 'running'"],
    ['route', "route = 'exact_cache'"],
    ['provider', "provider = 'chatcomp'"],
    ['prompt_tokens', 'prompt_tokens = prompt_tokens + 1'],
    ['completion_tokens', 'completion_tokens = completion_tokens + 1'],
    ['latency_ms', 'latency_ms = latency_ms + 1'],
    ['latency_ms', 'latency_ms = NULL'],
    ['error_json', `error_json = '{"kind":"upstream_error","message":"made up"}'`],
  ];
  for (const [column, assignment] of edits) {
    const runId = await runOf(built);
    await edit(built, runId, assignment);
    await assertBrokenAt(built, runId, column, 'run.completed');
  }
  assert.equal((await integrity(built, untouched)).ok, true, 'other runs are not affected');
});

test('the evidence packet carries the same verdict: a run whose cost was edited is not ok there either', async (t) => {
  const built = await build(t);
  const runId = await runOf(built);
  const packetOf = async () => json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` }));
  assert.equal((await packetOf()).integrity.ok, true);
  await edit(built, runId, 'cost_usd = cost_usd + 1');
  const verdict = await assertBrokenAt(built, runId, 'cost_usd', 'run.completed');
  const { integrity: packed } = await packetOf();
  assert.deepEqual({ ...packed, checkedAt: null }, { ...verdict, checkedAt: null });
});

test('a failed run verifies with its error; an edited, dropped or hidden error is reported at its run.failed event', async (t) => {
  const built = await build(t);
  const failedRun = async () => {
    const response = await chat(built, 'gpt-4o-mini-mock-5xx');
    assert.equal(response.statusCode, 502);
    return String(response.headers['x-svc-run-id']);
  };
  const untouched = await failedRun();
  const { run } = json(await built.app.inject({ url: `/api/v1/runs/${untouched}` }));
  assert.equal(run.status, 'failed');
  assert.equal(run.error.kind, 'upstream_error');
  assert.equal((await integrity(built, untouched)).ok, true);

  const reworded = await failedRun();
  await edit(built, reworded, 'error_json = ?', [JSON.stringify({ ...run.error, message: 'the client cancelled' })]);
  await assertBrokenAt(built, reworded, 'error_json', 'run.failed');

  const dropped = await failedRun();
  await edit(built, dropped, 'error_json = NULL');
  await assertBrokenAt(built, dropped, 'error_json', 'run.failed');

  const hidden = await failedRun();
  await edit(built, hidden, "status = 'completed', error_json = NULL");
  await assertBrokenAt(built, hidden, 'status', 'run.failed');
});

test('a priced run verifies with its cost as stored, and a cost one ulp off does not', async (t) => {
  const upstream = await startFakeUpstream(t, (_req, res) => sendJson(res, 200, completion('priced')));
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const runId = await runOf(built);
  const { run } = json(await built.app.inject({ url: `/api/v1/runs/${runId}` }));
  assert.equal(run.priced, true);
  assert.ok(run.costUsd > 0 && !Number.isInteger(run.costUsd * 1e6), `a cost with a fraction of a micro-dollar: ${run.costUsd}`);
  assert.equal((await integrity(built, runId)).ok, true, 'the REAL column gives back the double that was hashed');

  // The next double above the cost: the comparison is exact, not rounded to some number of digits.
  const bits = new Float64Array([run.costUsd]);
  new BigInt64Array(bits.buffer)[0]! += 1n;
  assert.notEqual(bits[0], run.costUsd);
  await edit(built, runId, 'cost_usd = ?', [bits[0]!]);
  await assertBrokenAt(built, runId, 'cost_usd', 'run.completed');
});

test('a run still running verifies as it stands; once finished its row is held to its run.completed event', async (t) => {
  // The upstream holds its answer until the test has read the run while it runs.
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const upstream = await startFakeUpstream(t, async (_req, res) => {
    await held;
    sendJson(res, 200, completion('at last'));
  });
  t.after(release);
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  const answered = chat(built);
  let runId: string | undefined;
  const deadline = Date.now() + loadScaled(10_000);
  while (!runId) {
    assert.ok(Date.now() < deadline, 'the run is committed as running');
    await new Promise((resolve) => setTimeout(resolve, 20));
    runId = json(await built.app.inject({ url: '/api/v1/runs?status=running' })).runs[0]?.id;
  }
  const running = await integrity(built, runId);
  assert.equal(running.ok, true, JSON.stringify(running));
  assert.equal((await eventsOf(built, runId)).some((event) => event.type.startsWith('run.') && event.type !== 'run.started'), false);

  release();
  assert.equal((await answered).statusCode, 200);
  assert.equal((await integrity(built, runId)).ok, true);
  await edit(built, runId, 'prompt_tokens = 0');
  await assertBrokenAt(built, runId, 'prompt_tokens', 'run.completed');
});

test('a run finished at start-up as interrupted verifies; an edit of its recorded outcome is reported at its run.failed event', async (t: TestContext) => {
  const built = await build(t);
  const { ledger, interruptedRuns, store } = built.services;
  const start = runStart();
  // Runs opened and never finished, as a killed process leaves them.
  const ids = [ledger.start(start).id, ledger.start(start).id, ledger.start(start).id];
  await store.flush();
  assert.equal(await interruptedRuns.finish(await interruptedRuns.find()), 3);

  const [untouched, rerouted, cleared] = ids as [string, string, string];
  const verified = await integrity(built, untouched);
  assert.equal(verified.ok, true, JSON.stringify(verified));
  assert.equal((await eventsOf(built, untouched)).at(-1)?.type, 'run.failed');

  await edit(built, rerouted, "route = 'live'");
  await assertBrokenAt(built, rerouted, 'route', 'run.failed');
  await edit(built, cleared, 'error_json = NULL');
  await assertBrokenAt(built, cleared, 'error_json', 'run.failed');
});

test('a finished run whose closing event was cut off, its head rewritten to the event before, is reported', async (t) => {
  const built = await build(t);
  const runId = await runOf(built);
  const [before, closing] = (await eventsOf(built, runId)).slice(-2);
  assert.ok(before && closing);
  assert.equal(closing.type, 'run.completed');
  await edit(built, runId, 'event_count = ?, last_hash = ?', [before.seq, before.hash]);
  await built.services.store.write((sql) => sql.run('DELETE FROM run_events WHERE run_id = ? AND seq = ?', [runId, closing.seq]));
  const verdict = await integrity(built, runId);
  assert.equal(verdict.ok, false);
  assert.equal(verdict.reason, 'the run is completed but its chain holds no closing run.* event');
  assert.equal(verdict.brokenAt, closing.seq, 'where the closing event is missing');
});

test('a run deleted whole from the data file leaves nothing to verify: every read of it is 404, as of a run never made, while the rollups still count it', async (t) => {
  const built = await build(t);
  const kept = await runOf(built);
  const deleted = await runOf(built);
  await built.services.store.flush();
  await built.services.store.write((sql) => {
    for (const table of ['run_events', 'run_attempts', 'run_replays', 'run_side_effects', 'run_feedback']) sql.run(`DELETE FROM ${table} WHERE run_id = ?`, [deleted]);
    sql.run('DELETE FROM runs WHERE id = ?', [deleted]);
  });
  for (const path of ['', '/integrity', '/evidence-packet', '/events']) {
    const response = await built.app.inject({ url: `/api/v1/runs/${deleted}${path}` });
    assert.equal(response.statusCode, 404, `${path}: ${response.body}`);
    assert.equal(json(response).error.message, 'Run not found.');
  }
  assert.equal((await integrity(built, kept)).ok, true, 'the run kept verifies: no chain links runs');
  const list = json(await built.app.inject({ url: '/api/v1/runs' }));
  assert.deepEqual(list.runs.map((run: { id: string }) => run.id), [kept]);
  assert.equal(list.pagination.total, 2, 'the rollups count the deleted run; nothing compares them with the runs');
});

test('an event chained onto the trace in the data file, the row not counting it, is reported where it is stored, not one past it', async (t) => {
  const built = await build(t);
  const runId = await runOf(built);
  const events = await eventsOf(built, runId);
  const head = events.at(-1)!;
  // Forged as someone with the data file and the chain's formula would: linked to the head, its hash right.
  const forged = linkedEvent(head.hash, runId, head.seq + 1, 'side_effect.planned', { toolName: 'wire', level: 4, payload: { usd: 1000 } }, Date.now());
  await built.services.store.flush();
  await built.services.store.write((sql) =>
    sql.run('INSERT INTO run_events (run_id, seq, type, payload_json, created_at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)', [
      runId,
      forged.seq,
      forged.type,
      JSON.stringify(forged.payload),
      forged.createdAt,
      forged.prevHash,
      forged.hash,
    ]),
  );
  const verdict = await integrity(built, runId);
  assert.equal(verdict.ok, false);
  assert.equal(verdict.reason, `the run records ${events.length} events but ${events.length + 1} are stored`);
  assert.equal(verdict.brokenAt, forged.seq, 'the first event the row does not count');
  assert.equal(verdict.eventCount, events.length + 1);
});

test('a trace append committed between integrity\'s reads (the row, then its events) is not a break: the row is read again', async (t) => {
  const built = await build(t);
  const runId = await runOf(built);
  await built.services.store.flush();
  const repo = createRunsRepository(built.services.store);
  let appended = 0;
  let rowReads = 0;
  const racing: RunsRepository = {
    ...repo,
    async eventsAfter(tenantId, id, after, limit) {
      if (appended === 0) {
        // The first read of the events comes after the row was read: an SDK append commits in between.
        const response = await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'tool.called', payload: { name: 'lookup', args: {}, sideEffectLevel: 0 } } });
        assert.ok(response.statusCode < 300, response.body);
        await built.services.store.flush();
        appended += 1;
      }
      return repo.eventsAfter(tenantId, id, after, limit);
    },
    async get(tenantId, id) {
      rowReads += 1;
      return repo.get(tenantId, id);
    },
  };
  const { clock, ledger, audit } = built.services;
  const service = createRunsService({ repo: racing, clock, ledger, audit, countTokens: () => 0, log: { warn: () => {} } });
  const verdict = await service.integrity({ tenantId: 'default', tenantWide: true, admin: true } as AuthContext, runId);
  assert.equal(verdict.ok, true, JSON.stringify(verdict));
  assert.equal(rowReads, 2, 'the row was read again');
  assert.equal(verdict.eventCount, (await eventsOf(built, runId)).length);
});

test('a run row is held to its hashed run.started event too: an edit of a start column is reported at seq 1; streamed and SDK-ingested runs verify', async (t) => {
  const built = await build(t);
  const identity = { 'x-svc-app': 'checkout', 'x-svc-agent': 'planner', 'x-svc-subject': 'user-7' };
  const identified = async (stream = false) => {
    counter += 1;
    const payload = { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `started ${counter} ${process.hrtime.bigint()}` }] };
    return String((await built.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: identity, payload })).headers['x-svc-run-id']);
  };
  const streamed = await identified(true);
  await built.services.store.flush();
  assert.equal((await integrity(built, streamed)).ok, true, 'a streamed run');
  const ingest = await built.app.inject({ method: 'POST', url: '/api/v1/ingest/prompt', headers: { 'x-svc-app': 'notes' }, payload: { source: 'langchain', prompt: 'Summarise.', metadata: { model: 'gpt-4o' } } });
  assert.ok(ingest.statusCode < 300, ingest.body);
  const ingested = String(json(ingest).runId);
  await built.services.store.flush();
  assert.equal((await integrity(built, ingested)).ok, true, 'an SDK-ingested run');

  const edits: Array<[column: string, assignment: string]> = [
    ['wire', "wire = 'messages'"],
    ['model', "model = 'gpt-4o'"],
    ['stream', 'stream = 1 - stream'],
    ['mode', "mode = 'observe'"],
    ['app_id', "app_id = 'other-app'"],
    ['app_id', 'app_id = NULL'],
    ['agent', "agent = 'someone-else'"],
    ['subject', 'subject = NULL'],
  ];
  for (const [column, assignment] of edits) {
    const runId = await identified();
    assert.equal((await integrity(built, runId)).ok, true, `${column}: before the edit`);
    await edit(built, runId, assignment);
    const verdict = await integrity(built, runId);
    assert.equal(verdict.ok, false, `${column}: ${JSON.stringify(verdict)}`);
    assert.equal(verdict.reason, `the run's ${column} does not match its hashed run.started event`);
    assert.equal(verdict.brokenAt, 1);
  }
});

test("a trace at its limits is verified (and read for the evidence packet) a page at a time, the event loop turning between pages; a break deep in it is still found", async (t) => {
  const { RUN_TRACE_MAX_EVENTS, RUN_CLIENT_TRACE_MAX_BYTES } = await import('../../src/evidence/sdk-events.ts');
  const built = await build(t);
  const { ledger, store } = built.services;
  const recorder = ledger.start(runStart());
  const filler = 'r'.repeat(Math.floor(RUN_CLIENT_TRACE_MAX_BYTES / RUN_TRACE_MAX_EVENTS) - 40);
  for (let seq = 2; seq < RUN_TRACE_MAX_EVENTS; seq++) recorder.event('tool.completed', { name: 'x', result: filler });
  recorder.finish(completedOutcome());
  await store.flush();

  // Turns of the event loop taken while integrity runs: none while a trace is read and hashed whole.
  let turns = 0;
  let counting = true;
  const tick = () => {
    turns += 1;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  const verified = await integrity(built, recorder.id);
  counting = false;
  assert.deepEqual([verified.ok, verified.eventCount], [true, RUN_TRACE_MAX_EVENTS], JSON.stringify(verified));
  assert.ok(turns > 100, `the event loop turned ${turns} times`);
  // The evidence packet reads (and verifies) the trace the same way.
  turns = 0;
  counting = true;
  setImmediate(tick);
  const packet = json(await built.app.inject({ url: `/api/v1/runs/${recorder.id}/evidence-packet` }));
  counting = false;
  assert.deepEqual([packet.integrity.ok, packet.events.length, packet.events.at(-1).type], [true, RUN_TRACE_MAX_EVENTS, 'run.completed']);
  assert.ok(turns > 100, `the event loop turned ${turns} times while the packet was read`);

  const [deep] = (await store.read((sql) => sql.all<{ seq: number }>('SELECT seq FROM run_events WHERE run_id = ? AND seq = 5000', [recorder.id])));
  assert.ok(deep);
  await store.write((sql) => sql.run(`UPDATE run_events SET payload_json = '{"name":"x","result":"edited"}' WHERE run_id = ? AND seq = 5000`, [recorder.id]));
  const broken = await integrity(built, recorder.id);
  assert.deepEqual([broken.ok, broken.brokenAt, broken.reason, broken.eventCount], [false, 5000, 'event content does not match its hash', RUN_TRACE_MAX_EVENTS]);
});

test('a run deleted while integrity reads its trace (retention, its organization\'s purge) is 404, not a broken chain', async (t) => {
  const built = await build(t);
  const runId = await runOf(built);
  await built.services.store.flush();
  const repo = createRunsRepository(built.services.store);
  let pages = 0;
  const pruning: RunsRepository = {
    ...repo,
    async eventsAfter(tenantId, id, after, limit) {
      pages += 1;
      const page = await repo.eventsAfter(tenantId, id, after, limit);
      // Retention deletes the run after its first page was read.
      if (pages === 1) await built.services.store.write((sql) => ['run_events', 'run_attempts', 'run_replays', 'runs'].forEach((table) => sql.run(`DELETE FROM ${table} WHERE ${table === 'runs' ? 'id' : 'run_id'} = ?`, [id])));
      return page.slice(0, 1);
    },
  };
  const { clock, ledger, audit } = built.services;
  const service = createRunsService({ repo: pruning, clock, ledger, audit, countTokens: () => 0, log: { warn: () => {} } });
  await assert.rejects(service.integrity({ tenantId: 'default', tenantWide: true, admin: true } as AuthContext, runId), (error: any) => error.code === 'not_found');
});

test('an upstream answer escaping lone UTF-16 surrogates is relayed as sent, its run verifies, and a cache hit gives the same text back, buffered and streamed', async (t) => {
  // Longer than the data file driver's short-string path, two surrogates in a row and a character after them: what
  // that driver cuts or replaces when such text is stored as text rather than as escaped JSON (docs/providers.md).
  const odd = 'lone-lone-lone-\udc00\ud800é-tail';
  const upstream = await startFakeUpstream(t, (req, res) => {
    if (req.body.stream) return sendChunks(res, [contentChunk(`s ${odd}`, { model: `gpt-4o-mini ${odd}` }), { ...contentChunk(''), choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }]);
    return sendJson(res, 200, completion(`b ${odd}`, `gpt-4o-mini ${odd}`));
  });
  const built = await build(t, { env: { CHATCOMP_API_KEY: 'sk-upstream', CHATCOMP_BASE_URL: upstream.baseUrl } });
  for (const stream of [false, true]) {
    const payload = { model: 'gpt-4o-mini', stream, messages: [{ role: 'user', content: `odd answers ${stream}` }] };
    const answers = [];
    for (const route of ['live', 'exact_cache']) {
      const response = await built.app.inject({ method: 'POST', url: '/v1/chat/completions', payload });
      assert.equal(response.statusCode, 200, response.body);
      const runId = String(response.headers['x-svc-run-id']);
      assert.equal(json(await built.app.inject({ url: `/api/v1/runs/${runId}` })).run.route, route);
      const verdict = await integrity(built, runId);
      assert.equal(verdict.ok, true, `${route}, stream ${stream}: ${JSON.stringify(verdict)}`);
      assert.equal(json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` })).integrity.ok, true);
      // The text as the client reads it: the SSE data lines' JSON, or the body's.
      const text = stream
        ? response.body.split('\n').filter((line) => line.startsWith('data: {')).map((line) => JSON.parse(line.slice(6)).choices[0]?.delta?.content ?? '').join('')
        : json(response).choices[0].message.content;
      answers.push(text);
    }
    assert.deepEqual(answers, Array(2).fill(`${stream ? 's' : 'b'} ${odd}`), `stream ${stream}: the escapes reach the client and come back from the cache`);
  }
  assert.equal(upstream.requests.length, 2, 'the second of each was a cache hit');
});

test('an event stored outside the run\'s sequence (seq 0, negative, a fraction) is reported, not left out of the verdict while the trace shows it', async (t) => {
  const built = await build(t);
  const cases: Array<[seq: number, brokenAt: number]> = [
    [0, 1],
    [-3, 1],
    [2.5, 3],
  ];
  for (const [seq, brokenAt] of cases) {
    const runId = await runOf(built);
    await built.services.store.flush();
    // A forged event, as someone with the data file would add one: it shows in the run's trace.
    await built.services.store.write((sql) =>
      sql.run(
        `INSERT INTO run_events (run_id, seq, type, payload_json, created_at, prev_hash, hash)
         SELECT run_id, ?, 'tool.called', '{"name":"rm","args":{},"sideEffectLevel":4}', created_at, prev_hash, hash FROM run_events WHERE run_id = ? AND seq = 1`,
        [seq, runId],
      ),
    );
    assert.ok((await eventsOf(built, runId)).some((event) => event.seq === seq), `seq ${seq} is in the trace shown`);
    const verdict = await integrity(built, runId);
    assert.equal(verdict.ok, false, `seq ${seq}: ${JSON.stringify(verdict)}`);
    assert.equal(verdict.brokenAt, brokenAt, `seq ${seq}`);
    assert.equal(verdict.reason, `an event numbered ${seq} is stored out of the run's sequence`);
    const packet = json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` }));
    assert.deepEqual({ ...packet.integrity, checkedAt: null }, { ...verdict, checkedAt: null }, `seq ${seq}: the packet's verdict`);
    assert.ok(packet.events.some((event: { seq: number }) => event.seq === seq), `seq ${seq}: the packet holds the event it judged`);
  }
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The canonical JSON docs/evidence.md describes (keys sorted, no whitespace), written here without svc's code. */
const sortedJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(sortedJson).join(',')}]`
    : value !== null && typeof value === 'object'
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${sortedJson((value as Record<string, unknown>)[key])}`)
          .join(',')}}`
      : JSON.stringify(value);

type PacketEvent = { seq: number; type: string; payload: unknown; createdAt: string; prevHash: string; hash: string };

/** A packet's chain recomputed offline as docs/evidence.md says: its head, or null when a link or hash is wrong. */
function offlineHead(runId: string, events: readonly PacketEvent[]): string | null {
  let prev = sha256(`run:${runId}`);
  for (const event of events) {
    const hash = sha256(prev + sortedJson({ runId, seq: event.seq, type: event.type, payload: event.payload, createdAt: Date.parse(event.createdAt) }));
    if (event.prevHash !== prev || event.hash !== hash) return null;
    prev = hash;
  }
  return prev;
}

test('an evidence packet verifies offline by the formula the docs give; a rewrite of the data file with its hashes recomputed, or a tail cut with the row set back, verifies too, and only a head kept from an earlier packet tells', async (t) => {
  const built = await build(t);
  const packetOf = async (runId: string) => json(await built.app.inject({ url: `/api/v1/runs/${runId}/evidence-packet` }));
  const runId = await runOf(built);
  for (const usd of [10, 1000]) {
    const appended = await built.app.inject({ method: 'POST', url: '/api/v1/trace', payload: { runId, type: 'side_effect.planned', payload: { toolName: 'wire', level: 4, payload: { usd } } } });
    assert.equal(appended.statusCode, 201, appended.body);
  }
  const kept = await packetOf(runId);
  assert.equal(kept.integrity.ok, true);
  assert.equal(offlineHead(runId, kept.events), kept.integrity.headHash, 'the documented formula gives the head svc reports');

  // The $1000 wire cut off, the row's count and head set back to the event before: no hash computed.
  const [before, last] = (kept.events as PacketEvent[]).slice(-2);
  await edit(built, runId, 'event_count = ?, last_hash = ?', [before!.seq, before!.hash]);
  await built.services.store.write((sql) => sql.run('DELETE FROM run_events WHERE run_id = ? AND seq = ?', [runId, last!.seq]));
  const cut = await packetOf(runId);
  assert.equal(cut.integrity.ok, true, 'the cut verifies');
  assert.equal(offlineHead(runId, cut.events), cut.integrity.headHash);
  assert.ok(cut.integrity.eventCount < kept.integrity.eventCount, 'the kept packet counts more events');

  // The $10 wire rewritten as $1 and every hash after it recomputed.
  const rows = await built.services.store.read((sql) => sql.all<{ seq: number; type: string; payload_json: string; created_at: number }>('SELECT seq, type, payload_json, created_at FROM run_events WHERE run_id = ? ORDER BY seq', [runId]));
  let prev = sha256(`run:${runId}`);
  await built.services.store.write((sql) => {
    for (const row of rows) {
      const payload = JSON.parse(row.payload_json.replace('"usd":10', '"usd":1')) as Record<string, unknown>;
      const event = linkedEvent(prev, runId, row.seq, row.type, payload, row.created_at);
      sql.run('UPDATE run_events SET payload_json = ?, prev_hash = ?, hash = ? WHERE run_id = ? AND seq = ?', [JSON.stringify(payload), event.prevHash, event.hash, runId, row.seq]);
      prev = event.hash;
    }
    sql.run('UPDATE runs SET last_hash = ? WHERE id = ?', [prev, runId]);
  });
  const rewritten = await packetOf(runId);
  assert.equal(rewritten.events.at(-1).payload.payload.usd, 1);
  assert.equal(rewritten.integrity.ok, true, 'the rewrite verifies');
  assert.equal(offlineHead(runId, rewritten.events), rewritten.integrity.headHash, 'and verifies offline');
  const atKeptCount = (rewritten.events as PacketEvent[]).find((event) => event.seq === before!.seq);
  assert.notEqual(atKeptCount?.hash, before!.hash, 'its hash at an event the kept packet holds differs from the kept one');
});
