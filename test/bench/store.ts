/**
 * Storage figures of `npm run bench` (issue 7 item 2; docs/performance.md):
 *   - committed run records per second through the write queue at concurrency 1/16/64 (ledger on a data file);
 *   - p50/p90 of GET /api/v1/runs, /api/v1/savings and /api/v1/usage/attribution on a data file of N runs
 *     (default 1,000,000; BENCH_QUICK=1 uses 100,000), generated through the store, not over HTTP;
 *   - cold start of `bin/svc serve` on that data file to the first 200 on /health.
 * Prints a table; `--json-out <file>` writes the figures. Run with: node --import tsx test/bench/store.ts
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config.ts';
import { systemClock } from '../../src/core/clock.ts';
import { createLedger } from '../../src/evidence/ledger.ts';
import { createRunsRepository } from '../../src/evidence/repo.ts';
import { failedReasonCode } from '../../src/evidence/ledger.ts';
import { addToRollups } from '../../src/evidence/rollups.ts';
import type { AttemptRecord, FinishedRun, RunRoute } from '../../src/evidence/types.ts';
import { buildApp } from '../../src/http/app.ts';
import { createServices } from '../../src/services.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { executedSvcEnv, hasTaskset, onCpus, ROOT } from '../support/process.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const RUNS = Number(process.env.BENCH_RUNS ?? (QUICK ? 100_000 : 1_000_000));
const DAY = 86_400_000;
/** Distinct models and apps of the generated runs (test/bench/management-reads.ts sets thousands). */
const MODELS = Number(process.env.BENCH_MODELS ?? 20);
const APPS = Number(process.env.BENCH_APPS ?? 8);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const explanation = JSON.stringify({ route: 'live', reason: 'served by mock', rejectedAlternatives: [], cache: [] });

/** A generated run, finished as the ledger finishes one (actual tokens: its attempts' sums), and its attempts. */
interface GeneratedRun {
  run: FinishedRun;
  attempts: AttemptRecord[];
}

/** The ledger's reason code of a finished run (reasonCodeOf in src/evidence/ledger.ts, from the outcome's parts). */
function reasonOf(status: string, route: RunRoute, errorKind: string | undefined, fallback: boolean): string {
  if (status === 'failed') return failedReasonCode(errorKind ?? 'unknown');
  if (status === 'blocked') return 'policy_block';
  if (route === 'exact_cache') return 'exact_cache_hit';
  if (route === 'artifact') return 'artifact';
  return fallback ? 'live_fallback' : 'live';
}

/**
 * Run `i` of `count`, shaped as real traffic records it (src/evidence/ledger.ts, src/gateway/pipeline.ts): a live run
 * has the attempt that answered it, with its tokens and cost (after a fallback, the failed attempt before it too); a
 * failed run its failed attempt (a 5xx, not billed; a timeout whose cost svc cannot know, so `priced: false`); a cache
 * hit, an artifact, a block or a run still running none.
 */
function generatedRun(i: number, count: number, now: number): GeneratedRun {
  const roll = i % 100;
  const status = roll < 90 ? 'completed' : roll < 96 ? 'failed' : roll < 97 ? 'blocked' : roll < 98 ? 'running' : 'completed';
  const route: RunRoute = status === 'blocked' ? 'blocked' : status === 'failed' ? 'live' : roll % 4 === 0 ? 'exact_cache' : roll % 20 === 1 ? 'artifact' : 'live';
  const id = `run_bench${i.toString(16).padStart(12, '0')}`;
  const model = `model-${i % MODELS}`;
  const createdAt = now - Math.floor((i / count) * 30 * DAY);
  const served = status === 'completed';
  const answered = { promptTokens: 200 + (i % 300), completionTokens: 50 + (i % 100) };
  const usage = served ? { ...answered, totalTokens: answered.promptTokens + answered.completionTokens } : { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  const live = served && route === 'live';
  const fallback = live && roll % 10 === 3;
  const timedOut = status === 'failed' && roll >= 94;
  const attempts: AttemptRecord[] = [];
  const attempt = (provider: string, outcome: AttemptRecord['outcome'], errorKind: string | null, tokens: typeof answered, costUsd: number) =>
    attempts.push({
      runId: id, seq: attempts.length + 1, provider, model, outcome, errorKind, upstreamStatus: errorKind === 'upstream_error' ? 503 : null,
      promptTokens: tokens.promptTokens, completionTokens: tokens.completionTokens, costUsd, latencyMs: 200 + (i % 500), createdAt: createdAt + 1,
    });
  if (fallback) attempt('chatcomp', 'failed', 'upstream_error', { promptTokens: 0, completionTokens: 0 }, 0);
  if (live) attempt(fallback ? 'backup' : 'chatcomp', 'success', null, answered, 0.0004 + (i % 7) * 0.0001);
  if (status === 'failed') attempt('chatcomp', 'failed', timedOut ? 'timeout' : 'upstream_error', { promptTokens: 0, completionTokens: 0 }, 0);
  const error = status === 'failed' ? { kind: timedOut ? 'timeout' : 'upstream_error', message: 'generated' } : undefined;
  const executionMethod = status === 'running' ? null : route === 'live' ? 'live_model' : route;
  const run: FinishedRun = {
    id, tenantId: 'default', appId: `app-${i % APPS}`, agent: `agent-${i % 4}`, subject: `user-${i % 500}`, keyId: null, mode: 'optimize',
    wire: 'chat_completions', model, provider: route === 'live' ? attempts.at(-1)?.provider ?? 'chatcomp' : null, status,
    route: status === 'running' ? null : route, stream: false, requestId: null, routeExplanation: null, usage,
    costUsd: attempts.reduce((sum, a) => sum + a.costUsd, 0),
    savedUsd: served && !live ? 0.0006 : 0, ghostSavedUsd: 0, savedMs: served && !live ? 800 : 0, priced: !timedOut,
    latencyMs: status === 'running' ? null : 200 + (i % 500), error: error ?? null, createdAt,
    completedAt: status === 'running' ? null : createdAt + 300, eventCount: 4, lastHash: 'h',
    fingerprint: `fp_${(i % 50).toString(16).padStart(24, '0')}`, executionMethod,
    reasonCode: status === 'running' ? null : reasonOf(status, route, error?.kind, fallback),
    fallback: fallback ? 'chatcomp->backup' : null,
    actualPromptTokens: attempts.reduce((sum, a) => sum + a.promptTokens, 0),
    actualCompletionTokens: attempts.reduce((sum, a) => sum + a.completionTokens, 0),
  };
  return { run, attempts };
}

/**
 * N runs over the last 30 days with a realistic spread of apps, models, subjects, routes and statuses, with their
 * attempts, written through the store; each batch adds its finished runs to the rollups as the ledger's commit does
 * (addToRollups), so the rollups hold what real traffic would (actual tokens, unpriced runs).
 */
export async function generateRuns(store: Store, count: number, now = Date.now()): Promise<void> {
  const batch = 20_000;
  for (let start = 0; start < count; start += batch) {
    await store.write((sql) => {
      const finished: FinishedRun[] = [];
      for (let i = start; i < Math.min(count, start + batch); i++) {
        const { run, attempts } = generatedRun(i, count, now);
        sql.run(
          `INSERT INTO runs (id, tenant_id, app_id, agent, subject, key_id, mode, wire, model, provider, status, route, stream, request_id,
             explanation_json, prompt_tokens, completion_tokens, cost_usd, saved_usd, ghost_saved_usd, saved_ms, priced, latency_ms, error_json,
             created_at, completed_at, event_count, last_hash, fingerprint, execution_method, reason_code, fallback)
           VALUES (?, ?, ?, ?, ?, NULL, 'optimize', 'chat_completions', ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 4, 'h', ?, ?, ?, ?)`,
          [
            run.id, run.tenantId, run.appId, run.agent, run.subject, run.model, run.provider, run.status, run.route, explanation,
            run.usage.promptTokens, run.usage.completionTokens, run.costUsd, run.savedUsd, run.savedMs, run.priced ? 1 : 0, run.latencyMs,
            run.error ? JSON.stringify(run.error) : null, run.createdAt, run.completedAt, run.fingerprint, run.executionMethod, run.reasonCode,
            run.fallback,
          ],
        );
        for (const a of attempts) {
          sql.run(
            `INSERT INTO run_attempts (run_id, seq, provider, model, outcome, error_kind, upstream_status, prompt_tokens, completion_tokens,
               cost_usd, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [a.runId, a.seq, a.provider, a.model, a.outcome, a.errorKind, a.upstreamStatus, a.promptTokens, a.completionTokens, a.costUsd, a.latencyMs, a.createdAt],
          );
        }
        if (run.status !== 'running') finished.push(run);
      }
      addToRollups(sql, finished);
    });
  }
}

async function commitRate(concurrency: number, seconds: number): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-ledger-'));
  const store = openStore({ dataDir: dir });
  const repo = createRunsRepository(store);
  const ledger = createLedger({ repo, clock: systemClock });
  let committed = 0;
  const deadline = performance.now() + seconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const run = ledger.start({ tenantId: 'default', appId: 'bench', agent: null, subject: null, keyId: null, mode: 'optimize', wire: 'chat_completions', model: 'gpt-4o-mini', stream: false, requestId: null });
      run.event('policy.verdict', { decision: 'allow' });
      run.event('provider.attempt', { provider: 'chatcomp' });
      run.attempt({ provider: 'chatcomp', model: 'gpt-4o-mini', outcome: 'success', errorKind: null, upstreamStatus: null, promptTokens: 20, completionTokens: 10, costUsd: 0.00001, latencyMs: 1 });
      run.finish({
        status: 'completed', route: 'live', provider: 'chatcomp', usage: { promptTokens: 20, completionTokens: 10, totalTokens: 30 }, costUsd: 0.00001, priced: true,
        routeExplanation: { route: 'live', reason: 'bench', rejectedAlternatives: [], policyVerdict: { decision: 'allow', policy: null, reason: null }, cache: [], artifact: null, estimatedSavings: { usd: 0, ms: 0, ghost: false }, fallback: null, provider: 'chatcomp', model: 'gpt-4o-mini', executionMethod: { id: 'live_model', referenceGrade: 'not_applicable' } },
      });
      await repo.settle();
      committed += 1;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const rate = committed / ((performance.now() - started) / 1000);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  return rate;
}

async function coldStart(dataDir: string): Promise<number> {
  const started = performance.now();
  // Every CPU: when run from run.mjs this process is pinned to one, and a child would inherit that.
  const cpus = `0-${availableParallelism() - 1}`;
  // Executed, as a user starts it (its first line sets glibc's malloc thresholds, then execs this process's node).
  const argv = [join(ROOT, 'bin', 'svc'), 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'silent'];
  const options: SpawnOptions = { stdio: ['ignore', 'pipe', 'inherit'], env: executedSvcEnv() };
  const [command, ...args] = onCpus(argv, hasTaskset() ? cpus : undefined);
  const child = spawn(command, args, options);
  const address = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`svc serve exited with ${code}`)));
  });
  const health = () =>
    new Promise<number>((resolve) => {
      get(`${address}/health`, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      }).on('error', () => resolve(0));
    });
  while ((await health()) !== 200) await new Promise((resolve) => setTimeout(resolve, 2));
  const elapsed = performance.now() - started;
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return elapsed;
}

export async function storageBench(): Promise<Record<string, unknown>> {
  const results: Record<string, unknown> = { runs: RUNS };
  const seconds = QUICK ? 1 : 3;
  const rates: Record<string, number> = {};
  for (const concurrency of [1, 16, 64]) rates[`c${concurrency}`] = Math.round(await commitRate(concurrency, seconds));
  results.ledgerCommitsPerSecond = rates;

  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-1m-'));
  try {
    let store = openStore({ dataDir: dir });
    const generated = performance.now();
    await generateRuns(store, RUNS);
    results.generateSeconds = Math.round((performance.now() - generated) / 100) / 10;
    await store.close();

    store = openStore({ dataDir: dir });
    const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_RATE_LIMIT_API_PER_MINUTE: '10000000' }, { dataDir: dir });
    const services = await createServices(config, store);
    const app = await buildApp(services);
    const queries: Record<string, { p50: number; p90: number }> = {};
    // The last two are not targets: what a model-filtered list costs (one run in 20 has `model-3`, none the other),
    // counted from the model's rollup rows and the running runs, its page read within the days of its runs; three
    // times each.
    const scans = new Set(['/api/v1/runs?model=model-3', '/api/v1/runs?model=no-such-model']);
    for (const url of ['/api/v1/runs', '/api/v1/runs?status=failed', '/api/v1/savings', '/api/v1/usage', '/api/v1/usage/attribution', ...scans]) {
      const times: number[] = [];
      for (let i = 0; i < (scans.has(url) ? 3 : QUICK ? 5 : 15); i++) {
        const started = performance.now();
        const response = await app.inject({ url });
        times.push(performance.now() - started);
        if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 200)}`);
      }
      times.sort((a, b) => a - b);
      queries[url] = { p50: Math.round(percentile(times, 50) * 10) / 10, p90: Math.round(percentile(times, 90) * 10) / 10 };
    }
    results.queryMs = queries;
    await app.close();
    await store.close();

    const starts: number[] = [];
    for (let i = 0; i < 3; i++) starts.push(await coldStart(dir));
    starts.sort((a, b) => a - b);
    results.coldStartMsWithRuns = { median: Math.round(percentile(starts, 50)), max: Math.round(starts.at(-1)!) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

export function printStorage(results: Record<string, any>): void {
  console.log(`\nStorage (${results.runs.toLocaleString('en-US')} runs generated in ${results.generateSeconds} s)`);
  console.log('  ledger commits/s through the write queue:', Object.entries(results.ledgerCommitsPerSecond).map(([c, n]) => `${c}=${n}`).join('  '));
  for (const [url, figures] of Object.entries(results.queryMs as Record<string, { p50: number; p90: number }>)) {
    console.log(`  GET ${url.padEnd(32)} p50 ${String(figures.p50).padStart(6)} ms   p90 ${String(figures.p90).padStart(6)} ms`);
  }
  console.log(`  cold start to /health 200 with the runs: median ${results.coldStartMsWithRuns.median} ms, max ${results.coldStartMsWithRuns.max} ms`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results = await storageBench();
  printStorage(results);
  const out = process.argv.indexOf('--json-out');
  if (out > 0 && process.argv[out + 1]) writeFileSync(process.argv[out + 1]!, JSON.stringify({ storage: results }, null, 2));
}
