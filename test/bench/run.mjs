#!/usr/bin/env node
/**
 * `npm run bench` (issue 7; docs/performance.md). Plain Node, no network: a node:http mock upstream speaking the
 * chat-completions wire (JSON and SSE), svc started from the bundle with CHATCOMP_BASE_URL pointing at it, and
 * side-by-side figures for A (client -> mock) and B (client -> svc -> mock), interleaved per concurrency.
 *
 * Throughput comes from autocannon. Its histogram stores whole milliseconds, too coarse for a sub-millisecond
 * overhead, so latency percentiles come from a closed-loop probe (undici Pool, hrtime per request) at the same
 * concurrency. svc is pinned to CPU 0 and the load generator + mock to CPU 1 with taskset when it exists.
 *
 * BENCH_QUICK=1 shortens everything (~1 minute); --json-out <file> writes the figures; --skip-storage skips the
 * storage part (test/bench/store.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http, { createServer } from 'node:http';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Pool } from 'undici';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const QUICK = process.env.BENCH_QUICK === '1';
const args = process.argv.slice(2);
const jsonOut = args.includes('--json-out') ? args[args.indexOf('--json-out') + 1] : null;
const hasTaskset = spawnSync('taskset', ['--version']).status === 0;


const MODEL = 'gpt-4o-mini';
const ANSWER = 'The quick brown fox jumps over the lazy dog.';
const round = (n, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function startMock() {
  const state = { hits: 0, chunkDelayMs: 0 };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', async () => {
      state.hits += 1;
      const request = JSON.parse(body || '{}');
      const usage = { prompt_tokens: 12, completion_tokens: 10, total_tokens: 22 };
      if (!request.stream) {
        const payload = JSON.stringify({ id: 'chatcmpl-mock', object: 'chat.completion', created: 1700000000, model: MODEL, choices: [{ index: 0, message: { role: 'assistant', content: ANSWER, refusal: null }, finish_reason: 'stop', logprobs: null }], usage });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
        res.end(payload);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const words = ANSWER.split(' ');
      const base = { id: 'chatcmpl-mock', object: 'chat.completion.chunk', created: 1700000000, model: MODEL };
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
      for (const [i, word] of words.entries()) {
        if (state.chunkDelayMs) await new Promise((resolve) => setTimeout(resolve, state.chunkDelayMs));
        res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: (i ? ' ' : '') + word }, finish_reason: null }] })}\n\n`);
      }
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
      if (request.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, state, url: `http://127.0.0.1:${server.address().port}` })));
}

function svcCommand(pin) {
  const node = [join(ROOT, 'bin', 'svc')];
  if (!hasTaskset || os.cpus().length < 2) return [process.execPath, node];
  // Unpinned means every CPU: a child would otherwise inherit this (pinned) process's single CPU.
  return ['taskset', ['-c', pin ? '0' : `0-${os.cpus().length - 1}`, process.execPath, ...node]];
}

/** `pin: false` for cold starts: node's startup uses helper threads, and nobody pins svc to start it. */
async function startSvc(mockUrl, dataDir, { pin = true } = {}) {
  const [command, base] = svcCommand(pin);
  const child = spawn(command, [...base, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'silent'], {
    env: {
      ...process.env,
      CHATCOMP_API_KEY: 'bench',
      CHATCOMP_BASE_URL: `${mockUrl}/v1`,
      SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '10000000',
      SVC_RATE_LIMIT_API_PER_MINUTE: '10000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on (\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`svc exited with ${code}`)));
  });
  return { child, url, pid: child.pid };
}

/** VmRSS of svc in MB; with taskset the svc node process is the taskset child's exec, same pid. */
function rssMb(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? round(Number(match[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

async function stopSvc(svc) {
  svc.child.kill('SIGTERM');
  await new Promise((resolve) => svc.child.once('exit', resolve));
}

let sequence = 0;
function chatBody(stream, unique) {
  const content = unique ? `bench question ${process.pid}-${sequence++}` : 'the one cached bench question';
  return JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], ...(stream ? { stream: true } : {}) });
}

const LIVE_HEADERS = { 'content-type': 'application/json', authorization: 'Bearer bench', 'x-svc-cache-bypass': 'true' };

/** Closed-loop latency probe: `concurrency` workers, each sending the next request when the last one finished. */
async function probe(baseUrl, { concurrency, requests, stream = false, headers = LIVE_HEADERS, unique = false }) {
  const pool = new Pool(baseUrl, { connections: concurrency, pipelining: 1 });
  const total = [];
  const firstByte = [];
  let failures = 0;
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      next += 1;
      const started = performance.now();
      try {
        const { statusCode, body } = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers, body: chatBody(stream, unique) });
        let first = null;
        for await (const _ of body) first ??= performance.now();
        if (statusCode !== 200) failures += 1;
        const ended = performance.now();
        total.push(ended - started);
        firstByte.push((first ?? ended) - started);
      } catch {
        failures += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await pool.close();
  total.sort((a, b) => a - b);
  firstByte.sort((a, b) => a - b);
  const summary = (sorted) => ({ p50: round(pct(sorted, 50), 3), p90: round(pct(sorted, 90), 3), p99: round(pct(sorted, 99), 3) });
  return { ...summary(total), ttfb: summary(firstByte), failures, count: total.length };
}

async function throughput(baseUrl, { connections, duration, headers = LIVE_HEADERS, unique = true }) {
  const result = await autocannon({
    url: `${baseUrl}/v1/chat/completions`,
    connections,
    duration,
    method: 'POST',
    headers,
    requests: [{ setupRequest: (request) => ({ ...request, body: chatBody(false, unique) }) }],
  });
  return { rps: round(result.requests.average, 0), non2xx: result.non2xx, errors: result.errors + result.timeouts };
}

/** GET /health with node:http (no client-side library warm-up inside the measured time). */
function healthStatus(baseUrl) {
  return new Promise((resolve) => {
    http
      .get(`${baseUrl}/health`, (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode));
      })
      .on('error', () => resolve(0));
  });
}

async function coldStart(mockUrl) {
  const times = [];
  for (let i = 0; i < (QUICK ? 3 : 7); i++) {
    const dir = mkdtempSync(join(os.tmpdir(), 'svc-bench-cold-'));
    const started = performance.now();
    const svc = await startSvc(mockUrl, dir, { pin: false });
    while ((await healthStatus(svc.url)) !== 200) await new Promise((resolve) => setTimeout(resolve, 2));
    times.push(performance.now() - started);
    await stopSvc(svc);
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return { median: round(pct(times, 50), 0), max: round(times.at(-1), 0) };
}

async function soak(svc, total) {
  const samples = [];
  const timer = setInterval(() => samples.push(rssMb(svc.pid)), 1000);
  const result = await autocannon({
    url: `${svc.url}/v1/chat/completions`,
    connections: 16,
    amount: total,
    method: 'POST',
    headers: LIVE_HEADERS,
    requests: [{ setupRequest: (request) => ({ ...request, body: chatBody(false, true) }) }],
  });
  clearInterval(timer);
  samples.push(rssMb(svc.pid));
  const quarter = (q) => {
    const part = samples.slice(Math.floor((q * samples.length) / 4), Math.floor(((q + 1) * samples.length) / 4));
    return part.length ? part.reduce((a, b) => a + b, 0) / part.length : samples.at(-1);
  };
  const growth = quarter(3) / quarter(2) - 1;
  return {
    requests: total,
    rps: round(result.requests.average, 0),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    rssStartMb: samples[0],
    rssMiddleMb: samples[Math.floor(samples.length / 2)],
    rssEndMb: samples.at(-1),
    rssMaxMb: Math.max(...samples),
    thirdVsFourthQuarterGrowth: round(growth * 100, 1),
    trend: growth > 0.05 ? 'upward' : 'flat',
  };
}

async function main() {
  const started = performance.now();
  const machine = { cpus: os.cpus().length, loadavg: os.loadavg().map((n) => round(n, 2)), node: process.version, pinning: hasTaskset && os.cpus().length >= 2 ? 'svc on CPU 0, load generator + mock on CPU 1 (taskset)' : 'unpinned' };
  console.log(`svc bench${QUICK ? ' (quick)' : ''}: ${machine.cpus} CPUs, load ${machine.loadavg.join(' ')}, node ${machine.node}, ${machine.pinning}`);
  const mock = await startMock();
  const dataDir = mkdtempSync(join(os.tmpdir(), 'svc-bench-'));
  const svc = await startSvc(mock.url, dataDir);
  const results = { machine, buffered: {}, streaming: {}, cache: {}, coldStart: null, soak: null, storage: null };
  let failures = 0;
  try {
    const duration = QUICK ? 1 : 5;
    const probeRequests = QUICK ? 300 : 3000;
    // Warm both paths (JIT, connection pools, the tokenizer is not needed: the mock reports usage).
    await probe(mock.url, { concurrency: 4, requests: 200 });
    await probe(svc.url, { concurrency: 4, requests: 500 });

    for (const c of [1, 16, 64]) {
      const a = await probe(mock.url, { concurrency: c, requests: probeRequests });
      const b = await probe(svc.url, { concurrency: c, requests: probeRequests });
      const ra = await throughput(mock.url, { connections: c, duration });
      const rb = await throughput(svc.url, { connections: c, duration });
      failures += b.failures + rb.non2xx + rb.errors;
      results.buffered[`c${c}`] = {
        A: { rps: ra.rps, p50: a.p50, p90: a.p90, p99: a.p99 },
        B: { rps: rb.rps, p50: b.p50, p90: b.p90, p99: b.p99 },
        addedMs: { p50: round(b.p50 - a.p50, 3), p90: round(b.p90 - a.p90, 3), p99: round(b.p99 - a.p99, 3) },
        rpsRatio: round(rb.rps / ra.rps, 3),
        rssMb: rssMb(svc.pid),
      };
    }

    for (const c of [1, 16]) {
      const a = await probe(mock.url, { concurrency: c, requests: probeRequests / 2, stream: true });
      const b = await probe(svc.url, { concurrency: c, requests: probeRequests / 2, stream: true });
      failures += b.failures;
      results.streaming[`c${c}`] = {
        A: { ttfbP50: a.ttfb.p50, ttfbP99: a.ttfb.p99, ttlbP50: a.p50, ttlbP99: a.p99 },
        B: { ttfbP50: b.ttfb.p50, ttfbP99: b.ttfb.p99, ttlbP50: b.p50, ttlbP99: b.p99 },
        addedTtfbMs: { p50: round(b.ttfb.p50 - a.ttfb.p50, 3), p99: round(b.ttfb.p99 - a.ttfb.p99, 3) },
        addedTtlbMs: { p50: round(b.p50 - a.p50, 3), p99: round(b.p99 - a.p99, 3) },
      };
    }
    // Chunks relayed as they arrive: with 20 ms between upstream chunks the first byte must come long before the last.
    mock.state.chunkDelayMs = 20;
    const spaced = await probe(svc.url, { concurrency: 1, requests: 5, stream: true });
    mock.state.chunkDelayMs = 0;
    results.streaming.relayedIncrementally = spaced.ttfb.p50 < spaced.p50 / 2;
    results.streaming.spacedChunks = { ttfbP50: spaced.ttfb.p50, ttlbP50: spaced.p50 };

    const cacheHeaders = { 'content-type': 'application/json', authorization: 'Bearer bench' };
    await probe(svc.url, { concurrency: 1, requests: 1, headers: cacheHeaders });
    const hitsBefore = mock.state.hits;
    for (const c of [1, 16]) {
      const b = await probe(svc.url, { concurrency: c, requests: probeRequests, headers: cacheHeaders });
      const rb = await throughput(svc.url, { connections: c, duration, headers: cacheHeaders, unique: false });
      failures += b.failures + rb.non2xx + rb.errors;
      results.cache[`c${c}`] = { rps: rb.rps, p50: b.p50, p90: b.p90, p99: b.p99 };
    }
    results.cache.upstreamHitsDuring = mock.state.hits - hitsBefore;

    results.soak = await soak(svc, QUICK ? 10_000 : 100_000);
    failures += results.soak.non2xx + results.soak.errors;
  } finally {
    await stopSvc(svc);
    rmSync(dataDir, { recursive: true, force: true });
  }
  results.coldStart = await coldStart(mock.url);
  mock.server.close();

  if (!args.includes('--skip-storage')) {
    const out = join(os.tmpdir(), `svc-bench-storage-${process.pid}.json`);
    const child = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'test', 'bench', 'store.ts'), '--json-out', out], { stdio: ['ignore', 'inherit', 'pipe'], env: process.env, cwd: ROOT });
    if (child.status !== 0) throw new Error(`storage bench failed: ${child.stderr}`);
    results.storage = JSON.parse(readFileSync(out, 'utf8')).storage;
    rmSync(out, { force: true });
  }
  results.seconds = round((performance.now() - started) / 1000, 0);
  print(results);
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2));
  if (failures > 0 || results.cache.upstreamHitsDuring !== 0) {
    console.error(`bench: ${failures} failed requests through svc; upstream hits during cache runs: ${results.cache.upstreamHitsDuring}`);
    process.exit(1);
  }
}

function print(r) {
  const row = (cells, widths) => cells.map((cell, i) => String(cell).padStart(widths[i])).join('  ');
  console.log('\nBuffered chat completions (ms; A = direct to mock, B = through svc)');
  const w = [5, 8, 8, 7, 7, 7, 7, 7, 7, 8, 8, 7, 7];
  console.log(row(['conc', 'A rps', 'B rps', 'B/A', 'A p50', 'B p50', 'A p99', 'B p99', '+p50', '+p90', '+p99', 'B p90', 'RSS MB'], w));
  for (const [c, f] of Object.entries(r.buffered)) {
    console.log(row([c.slice(1), f.A.rps, f.B.rps, f.rpsRatio, f.A.p50, f.B.p50, f.A.p99, f.B.p99, f.addedMs.p50, f.addedMs.p90, f.addedMs.p99, f.B.p90, f.rssMb], w));
  }
  console.log('\nStreaming (ms): time to first byte and to last byte');
  const s = [5, 9, 9, 9, 9, 10, 10, 10, 10];
  console.log(row(['conc', 'A ttfb50', 'B ttfb50', '+ttfb50', '+ttfb99', 'A ttlb50', 'B ttlb50', '+ttlb50', '+ttlb99'], s));
  for (const [c, f] of Object.entries(r.streaming)) {
    if (!c.startsWith('c')) continue;
    console.log(row([c.slice(1), f.A.ttfbP50, f.B.ttfbP50, f.addedTtfbMs.p50, f.addedTtfbMs.p99, f.A.ttlbP50, f.B.ttlbP50, f.addedTtlbMs.p50, f.addedTtlbMs.p99], s));
  }
  console.log(`  relayed as they arrive (20 ms between upstream chunks): ${r.streaming.relayedIncrementally ? 'yes' : 'NO'} (first byte ${r.streaming.spacedChunks.ttfbP50} ms, last ${r.streaming.spacedChunks.ttlbP50} ms)`);
  console.log('\nExact-cache hits (B only)');
  for (const [c, f] of Object.entries(r.cache)) if (c.startsWith('c')) console.log(`  concurrency ${c.slice(1)}: ${f.rps} rps, p50 ${f.p50} ms, p90 ${f.p90} ms, p99 ${f.p99} ms`);
  console.log(`  upstream requests during the cache runs: ${r.cache.upstreamHitsDuring}`);
  console.log(`\nCold start of bin/svc serve to the first /health 200 (empty data dir): median ${r.coldStart.median} ms, max ${r.coldStart.max} ms`);
  const k = r.soak;
  console.log(`Soak: ${k.requests} requests at ${k.rps} rps; RSS start ${k.rssStartMb} MB, middle ${k.rssMiddleMb} MB, end ${k.rssEndMb} MB, max ${k.rssMaxMb} MB; 3rd->4th quarter ${k.thirdVsFourthQuarterGrowth}% (${k.trend})`);
  if (r.storage) {
    const st = r.storage;
    console.log(`\nStorage (${st.runs.toLocaleString('en-US')} runs, generated in ${st.generateSeconds} s)`);
    console.log(`  ledger commits/s through the write queue: ${Object.entries(st.ledgerCommitsPerSecond).map(([c, n]) => `${c}=${n}`).join('  ')}`);
    for (const [url, f] of Object.entries(st.queryMs)) console.log(`  GET ${url.padEnd(32)} p50 ${f.p50} ms  p90 ${f.p90} ms`);
    console.log(`  cold start with those runs: median ${st.coldStartMsWithRuns.median} ms, max ${st.coldStartMsWithRuns.max} ms`);
  }
  console.log(`\n(${r.seconds} s)`);
}

// Pin this process (load generator + mock) to CPU 1; svc goes to CPU 0.
if (hasTaskset && os.cpus().length >= 2 && !process.env.BENCH_PINNED) {
  const child = spawn('taskset', ['-c', '1', process.execPath, fileURLToPath(import.meta.url), ...args], { stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' } });
  child.on('exit', (code) => process.exit(code ?? 1));
} else {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
