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
import { buildApp } from '../../src/http/app.ts';
import { createServices } from '../../src/services.ts';
import { ROLLUP_BACKFILL_SQL } from '../../src/store/migrations.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { executedSvcEnv, hasTaskset, onCpus, ROOT } from '../support/process.ts';

const QUICK = process.env.BENCH_QUICK === '1';
const RUNS = Number(process.env.BENCH_RUNS ?? (QUICK ? 100_000 : 1_000_000));
const DAY = 86_400_000;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const explanation = JSON.stringify({ route: 'live', reason: 'served by mock', rejectedAlternatives: [], cache: [] });

/** N runs over the last 30 days with a realistic spread of apps, models, subjects, routes and statuses. */
export async function generateRuns(store: Store, count: number, now = Date.now()): Promise<void> {
  const batch = 20_000;
  for (let start = 0; start < count; start += batch) {
    await store.write((sql) => {
      for (let i = start; i < Math.min(count, start + batch); i++) {
        const roll = i % 100;
        const status = roll < 90 ? 'completed' : roll < 96 ? 'failed' : roll < 97 ? 'blocked' : roll < 98 ? 'running' : 'completed';
        const route = status === 'blocked' ? 'blocked' : roll % 4 === 0 ? 'exact_cache' : roll % 20 === 1 ? 'artifact' : 'live';
        const cost = route === 'live' ? 0.0004 + (i % 7) * 0.0001 : 0;
        const saved = route === 'live' ? 0 : 0.0006;
        sql.run(
          `INSERT INTO runs (id, tenant_id, app_id, agent, subject, key_id, mode, wire, model, provider, status, route, stream, request_id,
             explanation_json, prompt_tokens, completion_tokens, cost_usd, saved_usd, ghost_saved_usd, saved_ms, priced, latency_ms,
             created_at, completed_at, event_count, last_hash, fingerprint, execution_method, reason_code, fallback)
           VALUES (?, 'default', ?, ?, ?, NULL, 'optimize', 'chat_completions', ?, 'chatcomp', ?, ?, 0, NULL, ?, ?, ?, ?, ?, 0, ?, 1, ?, ?, ?, 4, 'h', ?, ?, ?, NULL)`,
          [
            `run_bench${i.toString(16).padStart(12, '0')}`,
            `app-${i % 8}`,
            `agent-${i % 4}`,
            `user-${i % 500}`,
            `model-${i % 20}`,
            status,
            status === 'running' ? null : route,
            explanation,
            200 + (i % 300),
            50 + (i % 100),
            cost,
            saved,
            route === 'live' ? 0 : 800,
            200 + (i % 500),
            now - Math.floor((i / count) * 30 * DAY),
            status === 'running' ? null : now - Math.floor((i / count) * 30 * DAY) + 300,
            `fp_${(i % 50).toString(16).padStart(24, '0')}`,
            route === 'live' ? 'live_model' : route,
            status === 'failed' ? 'failed:upstream_error' : route === 'live' ? 'live' : `${route}_hit`,
          ],
        );
      }
    });
  }
  await store.write((sql) => {
    sql.run('DELETE FROM run_rollups');
    for (const statement of ROLLUP_BACKFILL_SQL.split(';').filter((part) => part.trim())) sql.run(statement);
  });
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
