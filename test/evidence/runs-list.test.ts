/**
 * GET /api/v1/runs filtered by model or provider: its total and facets equal counting the runs, come from the
 * rollups without walking the tenant's runs, and its page reads only the days the model or provider has runs on; a
 * model filter takes any model a gateway run can be recorded under.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import type { RunOutcome } from '../../src/evidence/ledger.ts';
import { RUN_MODEL_MAX_LENGTH } from '../../src/evidence/types.ts';
import type { Services } from '../../src/services.ts';
import type { Store } from '../../src/store/store.ts';
import { bearer, build, json } from '../support/build.ts';
import { completedOutcome, runStart } from '../support/run-outcome.ts';
import { recording, type Read } from '../support/counting-store.ts';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 15, 12);
const ADMIN_TOKEN = 'bootstrap-secret-token-1234567890';

interface Seed {
  model: string;
  provider: string | null;
  app: string | null;
  at: number;
  /** Omitted: the run is left running. */
  outcome?: Pick<RunOutcome, 'status' | 'route'>;
}

const LIVE = { status: 'completed', route: 'live' } as const;
const CACHED = { status: 'completed', route: 'exact_cache' } as const;
const ARTIFACT = { status: 'completed', route: 'artifact' } as const;
const FAILED = { status: 'failed', route: 'live' } as const;
const BLOCKED = { status: 'blocked', route: 'blocked' } as const;

/**
 * Runs over six recent days of two models, two providers (and none) and two apps (and none), in every status and
 * route; 'rare-old' has runs only on a day 40 days back, 'late' finished runs 20 days back and one still running.
 */
function seeds(): Seed[] {
  const outcomes = [LIVE, CACHED, FAILED, ARTIFACT, BLOCKED, LIVE, FAILED];
  const providers = ['chatcomp', 'messages'];
  const apps = ['shop', 'blog', null];
  const out: Seed[] = [];
  for (let i = 0; i < 84; i++) {
    const outcome = outcomes[i % outcomes.length]!;
    out.push({
      model: i % 3 === 0 ? 'beta' : 'alpha',
      provider: outcome.route === 'live' ? providers[i % 2]! : i % 2 === 0 ? null : 'chatcomp',
      app: apps[i % 3]!,
      at: NOW - (i % 6) * DAY - i * 60_000,
      outcome,
    });
  }
  for (let i = 0; i < 5; i++) {
    out.push({ model: 'rare-old', provider: 'chatcomp', app: i % 2 === 0 ? 'shop' : null, at: NOW - 40 * DAY + i * 600_000, outcome: i === 3 ? FAILED : LIVE });
  }
  out.push({ model: 'late', provider: 'messages', app: 'shop', at: NOW - 20 * DAY, outcome: LIVE });
  out.push({ model: 'late', provider: 'messages', app: 'blog', at: NOW - 20 * DAY + 1000, outcome: CACHED });
  out.push({ model: 'late', provider: null, app: 'shop', at: NOW - 3_600_000 });
  out.push({ model: 'alpha', provider: null, app: 'blog', at: NOW - 60_000 });
  return out;
}

async function seed(services: Services): Promise<void> {
  for (const run of seeds()) {
    const recorder = services.ledger.start(runStart({ appId: run.app, model: run.model, startedAt: run.at }));
    if (run.outcome) recorder.finish({ ...completedOutcome(run.model), ...run.outcome, provider: run.provider, costUsd: 0.001 });
  }
  await services.store.flush();
}

type RunView = { id: string; model: string; provider: string | null; appId: string | null; status: string; route: string | null; createdAt: string };
type Built = Awaited<ReturnType<typeof build>>;

async function allRuns(app: Built['app'], headers: Record<string, string>): Promise<RunView[]> {
  const runs: RunView[] = [];
  for (let offset = 0; ; offset += 200) {
    const page = json(await app.inject({ url: `/api/v1/runs?limit=200&offset=${offset}`, headers }));
    runs.push(...page.runs);
    if (!page.pagination.hasMore) return runs;
  }
}

/** The list a filter gives, counted on the client from every run: page order, total, each facet without its own filter. */
function expected(runs: readonly RunView[], query: URLSearchParams) {
  const since = query.get('since');
  const others = runs.filter(
    (run) =>
      (!query.has('model') || run.model === query.get('model')) &&
      (!query.has('provider') || run.provider === query.get('provider')) &&
      (since === null || Date.parse(run.createdAt) >= Date.parse(since)),
  );
  const routeOk = (run: RunView) => !query.has('route') || run.route === query.get('route');
  const statusOk = (run: RunView) => !query.has('status') || run.status === query.get('status');
  const tally = (list: RunView[], key: (run: RunView) => string) => {
    const out: Record<string, number> = {};
    for (const run of list) out[key(run)] = (out[key(run)] ?? 0) + 1;
    return out;
  };
  const matching = others.filter((run) => routeOk(run) && statusOk(run));
  return {
    ids: matching.map((run) => run.id),
    total: matching.length,
    facets: { route: tally(others.filter(statusOk), (run) => run.route ?? 'unknown'), status: tally(others.filter(routeOk), (run) => run.status) },
  };
}

/**
 * The plans of the statements over `runs` among `reads`: each must be bounded by the running status or a created_at
 * range (never a walk of the tenant's runs), and a range must lie within [from, to].
 */
async function assertBounded(store: Store, reads: Read[], span: { from: number; to: number }, label: string): Promise<void> {
  const overRuns = reads.filter((read) => /\bFROM runs\b/.test(read.text));
  for (const read of overRuns) {
    const plan = await store.read((sql) => sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${read.text}`, read.params));
    for (const { detail } of plan.filter((row) => /^(SCAN|SEARCH) runs\b/.test(row.detail))) {
      assert.match(detail, /status=\?|created_at>\? AND created_at<\?/, `${label}: ${read.text} walks the tenant's runs (${detail})`);
    }
    const between = read.text.indexOf('created_at BETWEEN ? AND ?');
    if (between >= 0) {
      const at = read.text.slice(0, between).split('?').length - 1;
      const [from, to] = (read.params as number[]).slice(at, at + 2);
      assert.ok(from! >= span.from && to! <= span.to, `${label}: reads ${new Date(from!).toISOString()}..${new Date(to!).toISOString()}`);
    }
  }
}

const dayStart = (ms: number) => Math.floor(ms / DAY) * DAY;

test('a model or provider filter counts from the rollups and reads only its days; every combination equals counting the runs', async (t) => {
  const watch = recording();
  const { app, services } = await build(t, { env: { SVC_API_KEY: ADMIN_TOKEN }, overrides: { clock: { now: () => NOW } }, wrapStore: watch.wrap });
  const admin = bearer(ADMIN_TOKEN);
  const shop = bearer(json(await app.inject({ method: 'POST', url: '/api/v1/keys', headers: admin, payload: { name: 'shop', appId: 'shop' } })).token);
  await seed(services);
  const everything = await allRuns(app, admin);
  assert.equal(everything.length, seeds().length);

  const since = new Date(NOW - 2.5 * DAY).toISOString();
  const cases: Array<{ query: string; headers: Record<string, string>; app?: string; exact?: boolean }> = [];
  for (const [headers, appId] of [[admin, undefined], [shop, 'shop']] as const) {
    for (const query of [
      'model=alpha', 'model=beta', 'model=rare-old', 'model=late', 'model=no-such-model', 'provider=chatcomp', 'provider=messages',
      'model=alpha&route=live', 'model=alpha&status=failed', 'model=alpha&route=exact_cache&status=completed', 'model=late&status=running',
      'provider=chatcomp&status=completed', 'provider=messages&route=live&status=failed', 'model=rare-old&status=failed',
    ]) {
      cases.push({ query, headers, ...(appId ? { app: appId } : {}), exact: true });
    }
    for (const query of [
      'model=alpha&provider=chatcomp', 'model=beta&provider=messages&status=failed', 'model=rare-old&provider=messages',
      `model=alpha&since=${since}`, `provider=chatcomp&since=${since}&route=live`, `model=rare-old&since=${new Date(NOW - 40 * DAY + 1_000_000).toISOString()}`,
    ]) {
      cases.push({ query, headers, ...(appId ? { app: appId } : {}) });
    }
  }

  for (const { query, headers, app: appId, exact } of cases) {
    const label = `${appId ?? 'tenant'}: ${query}`;
    const params = new URLSearchParams(query);
    const visible = everything.filter((run) => appId === undefined || run.appId === appId);
    const want = expected(visible, params);
    watch.start();
    const first = json(await app.inject({ url: `/api/v1/runs?${query}&limit=4`, headers }));
    const reads = watch.stop();
    assert.equal(first.pagination.total, want.total, label);
    assert.deepEqual(first.facets, want.facets, label);
    if (exact) {
      // Every finished run of the model or provider lies on the days of its runs; the running ones are read by status.
      const own = visible.filter((run) => (!params.has('model') || run.model === params.get('model')) && (!params.has('provider') || run.provider === params.get('provider')));
      const times = own.map((run) => Date.parse(run.createdAt));
      const span = times.length > 0 ? { from: dayStart(Math.min(...times)), to: dayStart(Math.max(...times)) + DAY - 1 } : { from: 1, to: 0 };
      await assertBounded(services.store, reads, span, label);
    }
    // Every page, and one past the end.
    for (let offset = 0; offset <= want.total + 4; offset += 4) {
      const page = json(await app.inject({ url: `/api/v1/runs?${query}&limit=4&offset=${offset}`, headers }));
      assert.deepEqual(page.runs.map((run: RunView) => run.id), want.ids.slice(offset, offset + 4), `${label} offset ${offset}`);
      assert.equal(page.pagination.total, want.total, `${label} offset ${offset}`);
    }
  }
});

test("a model whose runs are all on an old day pages through them reading that day only", async (t) => {
  const watch = recording();
  const { app, services } = await build(t, { overrides: { clock: { now: () => NOW } }, wrapStore: watch.wrap });
  await seed(services);
  const oldDay = { from: dayStart(NOW - 40 * DAY), to: dayStart(NOW - 40 * DAY) + DAY - 1 };
  const seen: string[] = [];
  for (let offset = 0; offset < 8; offset += 2) {
    watch.start();
    const page = json(await app.inject({ url: `/api/v1/runs?model=rare-old&limit=2&offset=${offset}` }));
    await assertBounded(services.store, watch.stop(), oldDay, `offset ${offset}`);
    assert.equal(page.pagination.total, 5);
    assert.equal(page.pagination.hasMore, offset + 2 < 5);
    seen.push(...page.runs.map((run: RunView) => run.id));
    for (const run of page.runs) assert.equal(run.model, 'rare-old');
  }
  // Newest first, each once: the run ids are time-ordered.
  assert.equal(seen.length, 5);
  assert.deepEqual(seen, [...seen].sort().reverse());
  assert.equal(new Set(seen).size, 5);
  // 'late' has finished runs 20 days back and one still running: its page holds both.
  const late = json(await app.inject({ url: '/api/v1/runs?model=late' }));
  assert.deepEqual(late.runs.map((run: RunView) => run.status), ['running', 'completed', 'completed']);
  assert.deepEqual(late.facets.status, { running: 1, completed: 2 });
});

test('a run recorded under the longest model the gateway takes is found by that model; one character more is a 400', async (t) => {
  const { app } = await build(t);
  const longest = 'gpt-4o-mini-'.padEnd(RUN_MODEL_MAX_LENGTH, 'x');
  assert.equal(longest.length, 256);
  const chat = (model: string) =>
    app.inject({ method: 'POST', url: '/v1/chat/completions', payload: { model, messages: [{ role: 'user', content: 'hello' }] } });
  const answered = await chat(longest);
  assert.equal(answered.statusCode, 200);
  const runId = answered.headers['x-svc-run-id'];

  const listed = await app.inject({ url: `/api/v1/runs?model=${longest}` });
  assert.equal(listed.statusCode, 200, listed.body);
  const found = json(listed);
  assert.deepEqual(found.runs.map((run: RunView) => [run.id, run.model]), [[runId, longest]]);
  assert.equal(found.pagination.total, 1);

  // One character past it: the gateway refuses such a model, and the filter refuses it in the management error shape.
  const tooLong = `${longest}x`;
  assert.equal((await chat(tooLong)).statusCode, 400);
  const refused = await app.inject({ url: `/api/v1/runs?model=${tooLong}` });
  assert.equal(refused.statusCode, 400);
  const { error } = json(refused);
  assert.equal(error.code, 'invalid_request');
  assert.match(error.message, /^model: /);
  assert.deepEqual(error.details.issues.map((issue: { path: string }) => issue.path), ['model']);
});
