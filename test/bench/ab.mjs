#!/usr/bin/env node
/**
 * Two svc builds compared in interleaved rounds, the A/Bs docs/performance-notes.md quotes: both builds run at once,
 * each from its own bin/svc on a fresh data directory, pinned as `npm run bench` pins svc (CPU 0, this process with the load
 * generator and the mock on CPU 1). Each is warmed up (concurrency 8, then the measured concurrency). Then rounds of
 * buffered live requests (a new prompt each, so the whole live route and its ledger) alternate between them, the
 * order flipped every round, so that the machine's drift, which moves single runs by 10-25% here, falls on both
 * alike. Each build's latencies are pooled over its rounds.
 *
 *   node test/bench/ab.mjs --a <other checkout>/bin/svc [--b bin/svc] [--concurrency 1] [--rounds 8] [--seconds 3]
 *       [--warm-seconds 4] [--a-env '{"NAME":"value"}'] [--b-env '{...}'] [--json-out ab.json]
 *
 * Prints each round, then per build: requests, mean, p50 / p80 / p90 / p95 / p99 / p99.9 (ms, the client's view),
 * the share of requests above 1.5 ms and svc's CPU per request (ms). `--a-env` / `--b-env` add environment variables
 * to one side (a switch read by a build under test).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PINNED, cannon, chatBody, cliOption, comparedBuilds, cpuMs, createClientKey, percentile, round, runPinnedToLoadCpu, startMock, startSvc, stopSvc, summarize } from './lib.mjs';

const argv = process.argv.slice(2);
const option = (name, fallback) => cliOption(argv, name, fallback);

runPinnedToLoadCpu(import.meta.url, 'ab', main);

/** The figures of one build's pooled latencies (ms) and CPU: the bench's summary and the percentiles between. */
function figures(latencies, cpuMsTotal) {
  const { count, mean, p50, p90, p99 } = summarize(latencies);
  const sorted = Float64Array.from(latencies).sort();
  const at = (p) => round(percentile(sorted, p), 3);
  return {
    requests: count,
    mean,
    p50,
    p80: at(80),
    p90,
    p95: at(95),
    p99,
    'p99.9': at(99.9),
    above1_5msPercent: round((sorted.filter((v) => v > 1.5).length / count) * 100, 2),
    svcCpuMsPerRequest: round(cpuMsTotal / count, 3),
  };
}

async function main() {
  const { bins, envs } = comparedBuilds(argv);
  const concurrency = Number(option('--concurrency', 1));
  const rounds = Number(option('--rounds', 8));
  const seconds = Number(option('--seconds', 3));
  const warmSeconds = Number(option('--warm-seconds', 4));
  const jsonOut = option('--json-out');

  const mock = await startMock();
  const sides = {};
  const dirs = [];
  try {
    for (const name of ['A', 'B']) {
      const dataDir = mkdtempSync(join(tmpdir(), `svc-ab-${name}-`));
      dirs.push(dataDir);
      const svc = await startSvc({ bin: bins[name], mockUrl: mock.url, dataDir, env: envs[name] });
      const authorization = await createClientKey(svc.url);
      const next = () => ({ body: chatBody(), headers: { authorization } });
      sides[name] = { svc, next, latencies: [], cpuMs: 0 };
      await cannon(svc.url, { connections: 8, duration: warmSeconds, next });
      await cannon(svc.url, { connections: concurrency, duration: 2, next });
    }
    console.log(`A ${bins.A} ${JSON.stringify(envs.A)}\nB ${bins.B} ${JSON.stringify(envs.B)}`);
    console.log(`concurrency ${concurrency}, ${rounds} rounds of ${seconds} s each, ${PINNED ? 'svc on CPU 0, load + mock on CPU 1' : 'unpinned'}`);
    for (let i = 0; i < rounds; i++) {
      for (const name of i % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
        const side = sides[name];
        const before = cpuMs(side.svc.pid);
        const r = await cannon(side.svc.url, { connections: concurrency, duration: seconds, next: side.next });
        if (r.non2xx || r.errors || r.timeouts) throw new Error(`round ${i} ${name}: ${r.non2xx} non-2xx, ${r.errors + r.timeouts} errors`);
        side.cpuMs += cpuMs(side.svc.pid) - before;
        side.latencies.push(...r.latencies);
        const f = summarize(r.latencies);
        console.log(`round ${i} ${name}: ${f.count} requests, p50 ${f.p50} p90 ${f.p90} p99 ${f.p99} ms`);
      }
    }
    const result = { concurrency, rounds, seconds, A: { bin: bins.A, env: envs.A }, B: { bin: bins.B, env: envs.B } };
    for (const name of ['A', 'B']) {
      Object.assign(result[name], figures(sides[name].latencies, sides[name].cpuMs));
      const f = result[name];
      console.log(
        `${name} pooled: ${f.requests} requests, mean ${f.mean}, p50 ${f.p50}, p80 ${f.p80}, p90 ${f.p90}, p95 ${f.p95}, p99 ${f.p99}, ` +
          `p99.9 ${f['p99.9']} ms; above 1.5 ms ${f.above1_5msPercent}%; svc CPU ${f.svcCpuMsPerRequest} ms/request`,
      );
    }
    if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const side of Object.values(sides)) await stopSvc(side.svc);
    await mock.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}
