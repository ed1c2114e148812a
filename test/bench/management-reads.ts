/**
 * Management reads on a large data file (docs/performance.md): p50/p90 of the first page of GET /api/v1/runs
 * (unfiltered, and filtered by model, provider and status), /api/v1/savings and /api/v1/usage/attribution, on
 * BENCH_RUNS runs (default 200,000) of BENCH_MODELS distinct models (default 3,000) and BENCH_APPS apps (default
 * 2,000), generated through the store as test/bench/store.ts does (generateRuns), read through fastify's inject.
 * The cache stats have their own script (test/bench/cache-stats.ts), the audit log's page too (test/bench/audit.ts).
 * Run with: node --import tsx test/bench/management-reads.ts
 */
process.env.BENCH_MODELS ??= '3000';
process.env.BENCH_APPS ??= '2000';
const { mkdtempSync, rmSync } = await import('node:fs');
const { tmpdir } = await import('node:os');
const { join } = await import('node:path');
const { performance } = await import('node:perf_hooks');
const { loadConfig } = await import('../../src/config.ts');
const { buildApp } = await import('../../src/http/app.ts');
const { createServices } = await import('../../src/services.ts');
const { openStore } = await import('../../src/store/store.ts');
// Imported after the counts are set: the generator reads them when it loads.
const { generateRuns } = await import('./store.ts');

const RUNS = Number(process.env.BENCH_RUNS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const dir = mkdtempSync(join(tmpdir(), 'svc-bench-reads-'));
try {
  let store = openStore({ dataDir: dir });
  const generated = performance.now();
  await generateRuns(store, RUNS);
  console.log(`${RUNS.toLocaleString('en-US')} runs of ${process.env.BENCH_MODELS} models and ${process.env.BENCH_APPS} apps generated in ${((performance.now() - generated) / 1000).toFixed(1)} s`);
  await store.close();
  store = openStore({ dataDir: dir });
  const config = loadConfig({ SVC_LOG_LEVEL: 'silent', SVC_RATE_LIMIT_API_PER_MINUTE: '10000000' }, { dataDir: dir });
  const services = await createServices(config, store);
  const app = await buildApp(services);
  for (const url of [
    '/api/v1/runs',
    '/api/v1/runs?model=model-3',
    '/api/v1/runs?model=no-such-model',
    '/api/v1/runs?provider=backup',
    '/api/v1/runs?status=failed',
    '/api/v1/runs?model=model-3&status=failed',
    '/api/v1/savings',
    '/api/v1/usage/attribution',
  ]) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const started = performance.now();
      const response = await app.inject({ url });
      times.push(performance.now() - started);
      if (response.statusCode !== 200) throw new Error(`${url}: ${response.statusCode} ${response.body.slice(0, 200)}`);
    }
    times.sort((a, b) => a - b);
    const at = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(1);
    console.log(`GET ${url.padEnd(44)} p50 ${at(50).padStart(8)} ms   p90 ${at(90).padStart(8)} ms`);
  }
  await app.close();
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
