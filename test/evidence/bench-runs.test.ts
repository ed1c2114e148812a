/**
 * The bench's generated ledger (test/bench/store.ts, docs/performance.md): what its queries are measured on must be
 * what real traffic writes, runs with their attempts, and rollups as the ledger's own write path keeps them.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { systemClock } from '../../src/core/clock.ts';
import { createLedger } from '../../src/evidence/ledger.ts';
import { createRunsRepository } from '../../src/evidence/repo.ts';
import type { RunRecord, RunRoute } from '../../src/evidence/types.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { generateRuns } from '../bench/store.ts';
import { build, json } from '../support/build.ts';
import { tempDir } from '../support/process.ts';
import { runStart } from '../support/run-outcome.ts';

const RUNS = 200; // every share of the generator's spread (it repeats every 100 runs), twice

type RunRow = {
  id: string; app_id: string | null; agent: string | null; subject: string | null; model: string; provider: string | null; status: string;
  route: string | null; prompt_tokens: number; completion_tokens: number; cost_usd: number; saved_usd: number; ghost_saved_usd: number;
  saved_ms: number; priced: number; error_json: string | null; created_at: number; fingerprint: string | null; execution_method: string | null;
  fallback: string | null;
};
type AttemptRow = { run_id: string; provider: string; model: string; outcome: 'success' | 'failed' | 'aborted'; error_kind: string | null;
  upstream_status: number | null; prompt_tokens: number; completion_tokens: number; cost_usd: number; latency_ms: number };

/** Every rollup row, costs rounded (the same sums added in another order may differ in their last bits). */
function rollupRows(store: Store) {
  return store.read((sql) =>
    sql
      .all<Record<string, number | string>>(
        `SELECT tenant_id, dim, value, day, app_id, status, route, runs, cost_usd, saved_usd, ghost_saved_usd, saved_ms, prompt_tokens,
           completion_tokens, unpriced_runs, actual_prompt_tokens, actual_completion_tokens
         FROM run_rollups ORDER BY tenant_id, dim, day, value, app_id, status, route`,
      )
      .map((row) => ({ ...row, cost_usd: Number((row.cost_usd as number).toFixed(9)), saved_usd: Number((row.saved_usd as number).toFixed(9)) })),
  );
}

/** Record the generated runs again through the ledger (the gateway's write path), each with its attempts and outcome. */
async function throughTheLedger(runs: RunRow[], attempts: AttemptRow[], dataDir: string): Promise<Store> {
  const store = openStore({ dataDir });
  const repo = createRunsRepository(store);
  const ledger = createLedger({ repo, clock: systemClock });
  for (const row of runs) {
    const run = ledger.start(
      runStart({ appId: row.app_id, agent: row.agent, subject: row.subject, model: row.model, startedAt: row.created_at, fingerprint: row.fingerprint }),
    );
    for (const a of attempts.filter((attempt) => attempt.run_id === row.id)) {
      run.attempt({ provider: a.provider, model: a.model, outcome: a.outcome, errorKind: a.error_kind, upstreamStatus: a.upstream_status,
        promptTokens: a.prompt_tokens, completionTokens: a.completion_tokens, costUsd: a.cost_usd, latencyMs: a.latency_ms });
    }
    if (row.status === 'running') continue;
    const [from, to] = row.fallback?.split('->') ?? [];
    const usage = { promptTokens: row.prompt_tokens, completionTokens: row.completion_tokens, totalTokens: row.prompt_tokens + row.completion_tokens };
    run.finish({
      status: row.status as Exclude<RunRecord['status'], 'running'>, route: row.route as RunRoute, provider: row.provider, usage, costUsd: row.cost_usd,
      priced: row.priced === 1, savedUsd: row.saved_usd, ghostSavedUsd: row.ghost_saved_usd, savedMs: row.saved_ms,
      ...(row.error_json ? { error: JSON.parse(row.error_json) } : {}),
      routeExplanation: {
        route: row.route as RunRoute, reason: 'bench', rejectedAlternatives: [], policyVerdict: { decision: 'allow', policy: null, reason: null },
        cache: [], artifact: null, estimatedSavings: { usd: 0, ms: 0, ghost: false }, provider: row.provider, model: row.model,
        fallback: from && to ? { from, to, reason: 'upstream_error' } : null,
        executionMethod: { id: row.execution_method!, referenceGrade: 'not_applicable' },
      },
    });
  }
  await repo.committed();
  return store;
}

test("the bench's generated runs carry what real traffic writes, and their rollups are those the ledger's write path keeps", async (t) => {
  const dir = tempDir(t);
  const generated = openStore({ dataDir: dir });
  await generateRuns(generated, RUNS);
  const { runs, attempts } = await generated.read((sql) => ({
    runs: sql.all<RunRow>('SELECT * FROM runs ORDER BY created_at, id'),
    attempts: sql.all<AttemptRow & { seq: number }>('SELECT * FROM run_attempts ORDER BY run_id, seq'),
  }));
  assert.equal(runs.length, RUNS);

  // Per run, as the gateway records one: the attempts of a live answer carry its tokens and make up its cost; a
  // failure has its failed attempt; a cache hit, an artifact, a block has none.
  for (const run of runs) {
    const own = attempts.filter((attempt) => attempt.run_id === run.id);
    const cost = own.reduce((sum, attempt) => sum + attempt.cost_usd, 0);
    if (run.status === 'completed' && run.route === 'live') {
      const served = own.at(-1);
      assert.deepEqual([served?.outcome, served?.provider, served?.prompt_tokens, served?.completion_tokens], ['success', run.provider, run.prompt_tokens, run.completion_tokens], run.id);
      assert.equal(run.cost_usd, cost, run.id);
      assert.equal(own.length, run.fallback ? 2 : 1, run.id);
    } else if (run.status === 'failed') {
      assert.deepEqual(own.map((attempt) => attempt.outcome), ['failed'], run.id);
      assert.equal(run.cost_usd, cost, run.id);
    } else {
      assert.deepEqual(own, [], `${run.id} (${run.status}, ${run.route})`);
    }
  }
  assert.ok(runs.some((run) => run.fallback !== null) && runs.some((run) => run.priced === 0), 'fallbacks and unpriced runs are in the spread');

  // The rollups equal those the ledger keeps for the same runs recorded through it.
  const viaLedger = await throughTheLedger(runs, attempts, tempDir(t));
  assert.deepEqual(await rollupRows(generated), await rollupRows(viaLedger));
  await viaLedger.close();
  await generated.close();

  // And over HTTP: the actual tokens of the live route are its attempts' tokens, a cache hit's none.
  const { app } = await build(t, { dataDir: dir });
  const attribution = json(await app.inject({ url: `/api/v1/usage/attribution?since=${new Date(Date.now() - 31 * 86_400_000).toISOString()}` }));
  const byRoute = Object.fromEntries(attribution.byRoute.map((entry: any) => [entry.value, entry.actualTotalTokens]));
  const attemptTokens = attempts.reduce((sum, attempt) => sum + attempt.prompt_tokens + attempt.completion_tokens, 0);
  assert.ok(attemptTokens > 0);
  assert.equal(byRoute.live, attemptTokens);
  assert.equal(byRoute.exact_cache, 0);
});
