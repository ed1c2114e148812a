#!/usr/bin/env node
/**
 * `npm run bench` (issue 7; docs/performance.md). Plain Node ESM, no network beyond 127.0.0.1.
 *
 * A node:http mock upstream speaks the chat-completions wire (JSON and SSE, 0 ms latency); svc is started from the
 * bundle (`bin/svc serve`) on a fresh data directory with CHATCOMP_BASE_URL pointing at the mock; then, in order:
 * buffered A/B (A = client -> mock, B = client -> svc -> mock) at concurrency 1/16/64, streaming A/B (TTFB/TTLB, rates)
 * at 1/16/64 and the relay check, exact-cache hits at 1/16/64, the soak, cold starts, the ledger's window at a crash
 * (test/bench/crash.mjs), and the storage figures (test/bench/store.ts).
 *
 * Pinning: with taskset and 2+ CPUs this script re-executes itself under `taskset -c 1` (load generator + mock) and
 * starts svc under `taskset -c 0`; otherwise everything runs unpinned and the output says so.
 *
 *   npm run bench                               full run
 *   BENCH_QUICK=1 npm run bench                 short durations, 10,000-request soak
 *   npm run bench -- --json-out bench.json      also write every figure as JSON
 *   npm run bench -- --skip-storage             gateway figures only
 *   npm run bench -- --only buffered,cache      some gateway sections only (buffered, streaming, cache, soak, cold, crash)
 *   BENCH_PROFILE=1 npm run bench               (or --profile) only: svc under --cpu-prof, ~20 s of concurrency-16
 *                                               buffered live traffic, top 15 self-time functions
 *                                               (profile kept in BENCH_PROFILE_DIR, default /tmp/svc-prof)
 *
 * Exit code 1 on a real failure: svc does not start or stop cleanly, a request through svc is not 2xx or errors,
 * a stream is incomplete or buffered or its new prompt reached the upstream other than once, the cache runs reach the
 * upstream. Missed targets are reported, not failures.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  bufferedSection,
  cacheSection,
  coldStartSection,
  plan,
  printBuffered,
  printCache,
  printColdStart,
  printProfileSection,
  printSoak,
  printStreaming,
  profileSection,
  soakSection,
  streamingSection,
  warmUp,
} from './gateway.mjs';
import { crashSection, printCrash } from './crash.mjs';
import { checkTargets, printTargets } from './targets.mjs';
import { PINNED, ROOT, authorizeClients, cliOption, cpuCalibration, currentAffinity, loopbackCalibration, machineInfo, round, rssMb, runPinnedToLoadCpu, startMock, startSvc, stopSvc, withoutExtraCaCerts } from './lib.mjs';

const argv = process.argv.slice(2);
const option = (name) => cliOption(argv, name);
const QUICK = process.env.BENCH_QUICK === '1';
const PROFILE = process.env.BENCH_PROFILE === '1' || argv.includes('--profile');
const JSON_OUT = option('--json-out');
const SKIP_STORAGE = argv.includes('--skip-storage') || option('--only') !== undefined;
const ONLY = option('--only')?.split(',').map((s) => s.trim());
const runs = (section) => !ONLY || ONLY.includes(section);

// Load generator + mock on CPU 1; svc itself is started on CPU 0.
runPinnedToLoadCpu(import.meta.url, 'bench', main);

async function main() {
  const started = performance.now();
  const machine = machineInfo();
  machine.benchAffinity = currentAffinity();
  const results = {
    startedAt: new Date().toISOString(),
    quick: QUICK,
    machine,
    plan: plan(QUICK),
    gateway: { buffered: null, streaming: null, cache: null, soak: null, coldStart: null, crash: null },
    // STORAGE: figures of issue 7 item 2 (test/bench/store.ts), filled by storageSection() below.
    storage: null,
    profile: null,
    targets: null,
    failures: [],
    seconds: null,
  };
  const fail = (message) => {
    results.failures.push(message);
    console.error(`  FAILURE: ${message}`);
  };

  console.log(`svc bench${QUICK ? ' (BENCH_QUICK)' : ''}${PROFILE ? ' (profile)' : ''}`);
  console.log(`  machine: ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.totalMemMb} MB, load average at start ${machine.loadavgAtStart.join(' ')}, node ${machine.node}`);
  console.log(`  pinning: ${machine.pinning}${machine.benchAffinity ? ` (this process: CPU ${machine.benchAffinity})` : ''}`);
  machine.extraCaCerts = withoutExtraCaCerts();
  if (machine.extraCaCerts) {
    const { file, perStartMs } = machine.extraCaCerts;
    console.log(`  NODE_EXTRA_CA_CERTS (${file}) removed for every process the bench starts: it costs each node start ~${perStartMs} ms here, TLS or not`);
  }
  machine.calibration = cpuCalibration();
  const { calibration } = machine;
  console.log(
    `  svc's CPU: a fixed piece of work (test/bench/calibration.mjs) took ${calibration.totalMs} ms (median of ${calibration.runs.join(' / ')}; ` +
      `${Object.entries(calibration.parts).map(([name, ms]) => `${name} ${ms}`).join(', ')}); lower is faster, the runs of a slow hour are slower`,
  );
  machine.loopback = await loopbackCalibration();
  const { loopback } = machine;
  console.log(
    `  loopback: ${loopback.roundTrips.toLocaleString('en-US')} round trips of 64 bytes ${loopback.crossCpu ? "to an echo server on svc's CPU and back" : 'to an echo server'} ` +
      `(test/bench/echo.mjs) took p50 ${loopback.p50Us} / p90 ${loopback.p90Us} / p99 ${loopback.p99Us} µs; lower is faster (the machine's wake-ups, which the line above does not time)`,
  );

  const mock = await startMock();
  const cleanups = [() => mock.close()];
  let svc = null;
  let dataDir = null;
  const onSignal = async (signal) => {
    console.error(`bench: ${signal}, stopping`);
    if (svc) await stopSvc(svc).catch(() => {});
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    if (PROFILE) {
      results.profile = await profileSection({ quick: QUICK, mock, fail });
      printProfileSection(results.profile);
    } else {
      dataDir = mkdtempSync(join(os.tmpdir(), 'svc-bench-'));
      try {
        svc = await startSvc({ mockUrl: mock.url, dataDir });
        await authorizeClients(svc.url);
      } catch (error) {
        fail(`svc did not start: ${error.message}`);
        throw error;
      }
      console.log(`  svc pid ${svc.pid} at ${svc.url}${PINNED ? ' on CPU 0' : ''}, data ${dataDir}; mock upstream at ${mock.url}; RSS after start ${rssMb(svc.pid)} MB`);
      const ctx = { quick: QUICK, mock, svc, dataDir, fail };
      try {
        const warm = (results.gateway.warmUp = await warmUp(ctx));
        console.log(`  warm-up: ${warm.warmupRequestsThroughSvc} requests through svc in ${warm.seconds} s at concurrency 8 (${warm.warmupRps} rps); a new body took route ${warm.sanityRoute} and reached the mock ${warm.sanityUpstreamHits} time(s)`);
        if (runs('buffered')) printBuffered((results.gateway.buffered = await bufferedSection(ctx)));
        if (runs('streaming')) printStreaming((results.gateway.streaming = await streamingSection(ctx)));
        if (runs('cache')) printCache((results.gateway.cache = await cacheSection(ctx)));
        if (runs('soak')) printSoak((results.gateway.soak = await soakSection(ctx)));
      } finally {
        const stopped = await stopSvc(svc);
        results.gateway.shutdown = stopped;
        if (stopped.code !== 0 || stopped.killed) fail(`svc did not stop cleanly on SIGTERM: code ${stopped.code}, signal ${stopped.signal}${stopped.killed ? ' (killed after the timeout)' : ''}; stderr: ${svc.stderr().slice(-1000)}`);
        else console.log(`\n  svc stopped on SIGTERM in ${stopped.ms} ms (exit 0)`);
        svc = null;
        rmSync(dataDir, { recursive: true, force: true });
        dataDir = null;
      }
      if (runs('cold')) printColdStart((results.gateway.coldStart = await coldStartSection(ctx)));
      if (runs('crash')) printCrash((results.gateway.crash = await crashSection(ctx)));
    }
  } finally {
    for (const cleanup of cleanups) await cleanup();
  }

  // =============================================================================================================
  // STORAGE (issue 7 item 2): committed run records per second and 1,000,000-run query figures.
  // Owned by test/bench/store.ts; run.mjs only collects its JSON into results.storage. --skip-storage skips it.
  // =============================================================================================================
  if (!PROFILE && !SKIP_STORAGE) results.storage = await storageSection(fail);

  if (!PROFILE) printTargets((results.targets = checkTargets(results)));

  results.seconds = round((performance.now() - started) / 1000, 0);
  results.machine.loadavgAtEnd = os.loadavg().map((n) => round(n, 2));
  if (JSON_OUT) {
    writeFileSync(JSON_OUT, `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\n  figures written to ${JSON_OUT}`);
  }
  console.log(`\nbench finished in ${results.seconds} s; load average at the end ${results.machine.loadavgAtEnd.join(' ')}`);
  if (results.failures.length) {
    console.error(`bench: ${results.failures.length} failure(s):\n${results.failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exit(1);
  }
}

/** Runs test/bench/store.ts in a child (it imports src/ through tsx) and returns its `storage` figures. */
async function storageSection(fail) {
  const out = join(os.tmpdir(), `svc-bench-storage-${process.pid}.json`);
  const child = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'bench', 'store.ts'), '--json-out', out], {
    stdio: ['ignore', 'inherit', 'pipe'],
    env: process.env,
    cwd: ROOT,
    encoding: 'utf8',
  });
  try {
    if (child.status !== 0) {
      fail(`storage bench (test/bench/store.ts) exited with ${child.status}: ${String(child.stderr).slice(-2000)}`);
      return null;
    }
    return JSON.parse(readFileSync(out, 'utf8')).storage;
  } finally {
    rmSync(out, { force: true });
  }
}
