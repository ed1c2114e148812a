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
 *       [--warm-seconds 4] [--a-env '{"NAME":"value"}'] [--b-env '{...}'] [--json-out ab.json] [--stream | --cache]
 *
 * `--cache`: rounds of exact-cache hits instead (one body per build, sent until its answer is served from the cache,
 * then repeated), the throughput the bench's exact-cache target measures; each round also prints its hits a second.
 *
 * `--stream`: rounds of `stream: true` requests instead (seconds x 1,000 x concurrency streams a round, after 4,000
 * streams of warm-up per build), the latency pooled being the time to the first body chunk (the bench's TTFB).
 *
 * Prints each round, then per build: requests, mean, p50 / p80 / p90 / p95 / p99 / p99.9 (ms, the client's view),
 * the share of requests above 1.5 ms and svc's CPU per request (ms). `--a-env` / `--b-env` add environment variables
 * to one side (a switch read by a build under test).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PINNED, cannon, chatBody, postJson, cliOption, comparedBuilds, cpuMs, createClientKey, percentile, round, runPinnedToLoadCpu, startMock, startSvc, stopSvc, streamProbe, summarize } from './lib.mjs';

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
  /** One round of buffered requests for `seconds`: their latencies. */
  const bufferedRound = async (side) => {
    const r = await cannon(side.svc.url, { connections: concurrency, duration: seconds, next: side.next });
    if (r.non2xx || r.errors || r.timeouts) throw new Error(`${r.non2xx} non-2xx, ${r.errors + r.timeouts} errors through ${side.svc.url}`);
    side.rps.push(Math.round(r.rps));
    return r.latencies;
  };
  /** One round of streams: their times to the first body chunk. */
  const streamRound = async (side) => {
    const r = await streamProbe(side.svc.url, { concurrency, requests: streamsPerRound, extraHeaders: { authorization: side.authorization } });
    if (r.failures) throw new Error(`${r.failures} failed streams through ${side.svc.url}: ${r.failureSamples.join(' | ')}`);
    return r.ttfb;
  };
  const { bins, envs } = comparedBuilds(argv);
  const concurrency = Number(option('--concurrency', 1));
  const rounds = Number(option('--rounds', 8));
  const seconds = Number(option('--seconds', 3));
  const warmSeconds = Number(option('--warm-seconds', 4));
  const jsonOut = option('--json-out');
  // Streams instead of buffered requests: each round is a number of streams (about `seconds` worth at c=1), and the
  // latency pooled is the time to the first body chunk (the bench's TTFB), not to the whole answer.
  const stream = argv.includes('--stream');
  const cached = !stream && argv.includes('--cache');
  const streamsPerRound = Math.round(seconds * 1_000 * concurrency);

  const mock = await startMock();
  const sides = {};
  const dirs = [];
  try {
    for (const name of ['A', 'B']) {
      const dataDir = mkdtempSync(join(tmpdir(), `svc-ab-${name}-`));
      dirs.push(dataDir);
      const svc = await startSvc({ bin: bins[name], mockUrl: mock.url, dataDir, env: envs[name] });
      const authorization = await createClientKey(svc.url);
      const repeated = { body: chatBody({ content: `The one cached A/B question (${name}).` }), headers: { authorization } };
      const next = cached ? () => repeated : () => ({ body: chatBody(), headers: { authorization } });
      sides[name] = { svc, next, authorization, latencies: [], rps: [], cpuMs: 0 };
      if (cached) await primeCache(svc.url, repeated);
      await cannon(svc.url, { connections: 8, duration: warmSeconds, next });
      await cannon(svc.url, { connections: concurrency, duration: 2, next });
      // The stream path's code is compiled over its first few thousand streams (docs/performance-notes.md).
      if (stream) await streamProbe(svc.url, { concurrency, requests: 4_000, extraHeaders: { authorization } });
    }
    console.log(`A ${bins.A} ${JSON.stringify(envs.A)}\nB ${bins.B} ${JSON.stringify(envs.B)}`);
    const unit = stream ? `${streamsPerRound} streams (TTFB)` : `${seconds} s${cached ? ' of exact-cache hits' : ''}`;
    console.log(`concurrency ${concurrency}, ${rounds} rounds of ${unit} each, ${PINNED ? 'svc on CPU 0, load + mock on CPU 1' : 'unpinned'}`);
    for (let i = 0; i < rounds; i++) {
      for (const name of i % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
        const side = sides[name];
        const before = cpuMs(side.svc.pid);
        const latencies = stream ? await streamRound(side) : await bufferedRound(side);
        side.cpuMs += cpuMs(side.svc.pid) - before;
        // One at a time: spread, a round of c=64 streams (128,000 latencies) overflowed the call stack.
        for (const latency of latencies) side.latencies.push(latency);
        const f = summarize(latencies);
        const rate = stream ? '' : `, ${side.rps.at(-1)}/s`;
        console.log(`round ${i} ${name}: ${f.count} requests${rate}, p50 ${f.p50} p90 ${f.p90} p99 ${f.p99} ms`);
      }
    }
    const result = { concurrency, rounds, seconds, stream, cached, A: { bin: bins.A, env: envs.A }, B: { bin: bins.B, env: envs.B } };
    for (const name of ['A', 'B']) {
      Object.assign(result[name], figures(sides[name].latencies, sides[name].cpuMs));
      if (!stream) result[name].rps = Math.round(sides[name].rps.reduce((sum, r) => sum + r, 0) / sides[name].rps.length);
      const f = result[name];
      console.log(
        `${name} pooled: ${f.requests} requests, mean ${f.mean}, p50 ${f.p50}, p80 ${f.p80}, p90 ${f.p90}, p95 ${f.p95}, p99 ${f.p99}, ` +
          `p99.9 ${f['p99.9']} ms; above 1.5 ms ${f.above1_5msPercent}%; svc CPU ${f.svcCpuMsPerRequest} ms/request` +
          (stream ? '' : `; mean rate ${f.rps}/s`),
      );
    }
    if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const side of Object.values(sides)) await stopSvc(side.svc);
    await mock.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/** Send `request` until svc answers it from the exact cache (the entry may be written by the group commit after the first answer). */
async function primeCache(url, request) {
  for (let attempt = 0; attempt < 40; attempt++) {
    const r = await postJson(url, '/v1/chat/completions', request.body, { 'content-type': 'application/json', ...request.headers });
    if (r.status !== 200) throw new Error(`cache priming answered ${r.status}: ${r.body.slice(0, 300)}`);
    if (r.headers['x-svc-route'] === 'exact_cache') return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`a repeated body was never answered from the exact cache through ${url}`);
}
