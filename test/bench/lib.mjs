/**
 * Shared pieces of `npm run bench` (docs/performance.md): statistics, the mock upstream, starting and stopping svc
 * from the bundle, RSS sampling, the autocannon wrapper with sub-millisecond latencies, and the streaming probe.
 * Plain Node ESM; nothing here touches the network beyond 127.0.0.1.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Pool } from 'undici';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The svc the bench starts: this checkout's, or another build's (BENCH_SVC_BIN=/path/to/checkout/bin/svc, for A/Bs). */
export const SVC_BIN = process.env.BENCH_SVC_BIN || join(ROOT, 'bin', 'svc');
export const MODEL = 'gpt-4o-mini';
export const ANSWER_WORDS = ['The', 'quick', 'brown', 'fox', 'jumps', 'over', 'the', 'lazy', 'dog.'];
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------------
// Numbers
// ---------------------------------------------------------------------------------------------------------------

export function round(n, digits = 2) {
  if (n === null || n === undefined || !Number.isFinite(n)) return null;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted, p) {
  if (!sorted.length) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** {count, p50, p90, p99, max, mean} of latencies in ms, 3 decimals. */
export function summarize(samples) {
  const sorted = Float64Array.from(samples).sort();
  if (!sorted.length) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: round(percentile(sorted, 50), 3),
    p90: round(percentile(sorted, 90), 3),
    p99: round(percentile(sorted, 99), 3),
    max: round(sorted[sorted.length - 1], 3),
    mean: round(sum / sorted.length, 3),
  };
}

export const median = (values) => percentile([...values].sort((a, b) => a - b), 50);

// ---------------------------------------------------------------------------------------------------------------
// Machine and pinning
// ---------------------------------------------------------------------------------------------------------------

export const HAS_TASKSET = spawnSync('taskset', ['--version']).status === 0;
export const CPUS = os.cpus().length;
/** Pinned when taskset exists and there are at least two CPUs: svc on CPU 0, this process (load + mock) on CPU 1. */
export const PINNED = HAS_TASKSET && CPUS >= 2;

export function machineInfo() {
  return {
    cpus: CPUS,
    cpuModel: os.cpus()[0]?.model ?? null,
    totalMemMb: Math.round(os.totalmem() / 2 ** 20),
    loadavgAtStart: os.loadavg().map((n) => round(n, 2)),
    node: process.version,
    platform: `${os.platform()} ${os.release()}`,
    pinning: PINNED
      ? 'taskset: svc on CPU 0; load generator (autocannon, undici) + mock upstream on CPU 1; cold starts on all CPUs'
      : HAS_TASKSET
        ? `unpinned (taskset present but only ${CPUS} CPU)`
        : 'unpinned (taskset not found)',
  };
}

/**
 * Run a bench script's `main` pinned with the load generator and the mock to CPU 1, the process under test going to
 * CPU 0: with taskset and 2+ CPUs the script first re-executes itself under `taskset -c 1` (`BENCH_PINNED` marks the
 * child). A failure of `main` prints its stack after `name` and exits 1.
 */
export function runPinnedToLoadCpu(scriptUrl, name, main) {
  if (PINNED && process.env.BENCH_PINNED !== '1') {
    const child = spawn('taskset', ['-c', '1', process.execPath, fileURLToPath(scriptUrl), ...process.argv.slice(2)], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_PINNED: '1' },
    });
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
    child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
    return;
  }
  main().catch((error) => {
    console.error(`${name}: ${error?.stack ?? error}`);
    process.exit(1);
  });
}

/** `argv` run under `taskset -c cpus` when taskset exists and a CPU list is given; as it is otherwise. */
function onCpus(argv, cpus) {
  return HAS_TASKSET && cpus ? ['taskset', '-c', cpus, ...argv] : argv;
}

/**
 * How fast svc's CPU was (CPU 0 when pinned): test/bench/calibration.mjs's fixed work (SQLite rows, JSON, SHA-256),
 * run `times` times in fresh processes; the median total and each part's median, in ms. Lower is faster.
 */
export function cpuCalibration(times = 3) {
  const script = join(ROOT, 'test', 'bench', 'calibration.mjs');
  const command = onCpus([process.execPath, script], PINNED ? '0' : null);
  const runs = [];
  for (let i = 0; i < times; i++) {
    const out = spawnSync(command[0], command.slice(1), { encoding: 'utf8', cwd: ROOT });
    if (out.status !== 0) throw new Error(`calibration failed (exit ${out.status ?? out.signal}): ${out.stderr}`);
    runs.push(JSON.parse(out.stdout));
  }
  const parts = Object.fromEntries(Object.keys(runs[0].parts).map((name) => [name, round(median(runs.map((r) => r.parts[name])), 0)]));
  return { totalMs: round(median(runs.map((r) => r.totalMs)), 0), parts, runs: runs.map((r) => round(r.totalMs, 0)) };
}

/**
 * How long a message takes to svc's CPU and back over loopback TCP: `roundTrips` sequential 64-byte round trips (after
 * `warmUp` more) from this process (the load generator's CPU when pinned) to test/bench/echo.mjs started on svc's CPU.
 * Each one wakes the other side's CPU and the other way round, as each request through svc does (the client's call,
 * svc's call to the mock, the two answers), and the direct A runs (client and mock on one CPU) do not: what those
 * wake-ups cost at the time of a run, which the computing of the calibration above does not time. Percentiles in µs;
 * lower is faster.
 */
export async function loopbackCalibration({ roundTrips = 5_000, warmUp = 1_000 } = {}) {
  const script = join(ROOT, 'test', 'bench', 'echo.mjs');
  const [command, ...args] = onCpus([process.execPath, script], PINNED ? '0' : null);
  const echo = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise((resolve, reject) => {
      echo.once('error', reject);
      echo.once('exit', (code, signal) => reject(new Error(`the echo server exited (${code ?? signal})`)));
      echo.stdout.once('data', (chunk) => resolve(Number(String(chunk).trim())));
    });
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const message = Buffer.alloc(64, 'x');
    let received = 0;
    let answered = null;
    socket.on('data', (chunk) => {
      received += chunk.length;
      if (received >= message.length && answered) {
        received -= message.length;
        answered();
      }
    });
    const times = [];
    for (let i = 0; i < warmUp + roundTrips; i++) {
      const startedAt = performance.now();
      await new Promise((resolve) => {
        answered = resolve;
        socket.write(message);
      });
      if (i >= warmUp) times.push((performance.now() - startedAt) * 1000);
    }
    socket.destroy();
    const { p50, p90, p99 } = summarize(times);
    return { roundTrips, crossCpu: PINNED, p50Us: round(p50, 1), p90Us: round(p90, 1), p99Us: round(p99, 1) };
  } finally {
    echo.kill();
  }
}

/** This process's CPU affinity as taskset reports it (e.g. "1"), or null. */
export function currentAffinity() {
  if (!HAS_TASKSET) return null;
  const out = spawnSync('taskset', ['-cp', String(process.pid)], { encoding: 'utf8' }).stdout ?? '';
  return /:\s*(\S+)\s*$/.exec(out.trim())?.[1] ?? null;
}

// ---------------------------------------------------------------------------------------------------------------
// Mock upstream: POST /v1/chat/completions, buffered JSON and SSE, 0 ms latency
// ---------------------------------------------------------------------------------------------------------------

/**
 * `state.hits` counts every chat-completions request, `state.svcHits` those svc sent (they carry svc's upstream key,
 * UPSTREAM_KEY; the bench's clients send their svc API key), `state.marked` those whose body contains
 * `state.marker`. `state.chunkDelayMs` spaces the SSE chunks (the relay check); `state.lastStream` records when the
 * mock wrote each content chunk (performance.now(), the same clock as the client in this process).
 */
export function startMock() {
  const state = { hits: 0, svcHits: 0, bufferedHits: 0, streamHits: 0, other: 0, marker: null, marked: 0, chunkDelayMs: 0, words: ANSWER_WORDS, lastStream: null };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url.endsWith('/chat/completions')) {
        state.other += 1;
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"not found","type":"invalid_request_error"}}');
        return;
      }
      state.hits += 1;
      if (req.headers.authorization === `Bearer ${UPSTREAM_KEY}`) state.svcHits += 1;
      const raw = Buffer.concat(chunks).toString('utf8');
      if (state.marker && raw.includes(state.marker)) state.marked += 1;
      let request;
      try {
        request = JSON.parse(raw);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"bad json","type":"invalid_request_error"}}');
        return;
      }
      const model = typeof request.model === 'string' ? request.model : MODEL;
      const promptTokens = 8 + Math.ceil(JSON.stringify(request.messages ?? '').length / 4);
      const words = state.words;
      const usage = { prompt_tokens: promptTokens, completion_tokens: words.length, total_tokens: promptTokens + words.length };
      const id = `chatcmpl-mock${state.hits}`;
      const created = Math.floor(Date.now() / 1000);
      if (!request.stream) {
        state.bufferedHits += 1;
        const payload = JSON.stringify({
          id,
          object: 'chat.completion',
          created,
          model,
          choices: [{ index: 0, message: { role: 'assistant', content: words.join(' '), refusal: null }, logprobs: null, finish_reason: 'stop' }],
          usage,
          system_fingerprint: 'fp_bench',
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
        res.end(payload);
        return;
      }
      state.streamHits += 1;
      streamAnswer(res, { id, created, model, words, usage, includeUsage: Boolean(request.stream_options?.include_usage), delayMs: state.chunkDelayMs, state });
    });
  });
  server.keepAliveTimeout = 120_000;
  server.headersTimeout = 130_000;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        server,
        state,
        port,
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise((done) => { server.closeAllConnections?.(); server.close(() => done()); }),
      });
    });
  });
}

async function streamAnswer(res, { id, created, model, words, usage, includeUsage, delayMs, state }) {
  const base = `{"id":"${id}","object":"chat.completion.chunk","created":${created},"model":${JSON.stringify(model)},"system_fingerprint":"fp_bench",`;
  const frame = (rest) => `data: ${base}${rest}}\n\n`;
  const timing = delayMs ? { contentWrittenAt: [], endedAt: null } : null;
  if (timing) state.lastStream = timing;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write(frame('"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]'));
  for (let i = 0; i < words.length; i++) {
    if (delayMs) await sleep(delayMs);
    if (res.destroyed) return;
    res.write(frame(`"choices":[{"index":0,"delta":{"content":${JSON.stringify((i ? ' ' : '') + words[i])}},"logprobs":null,"finish_reason":null}]`));
    timing?.contentWrittenAt.push(performance.now());
  }
  res.write(frame('"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]'));
  if (includeUsage) res.write(frame(`"choices":[],"usage":${JSON.stringify(usage)}`));
  res.end('data: [DONE]\n\n');
  if (timing) timing.endedAt = performance.now();
}

// ---------------------------------------------------------------------------------------------------------------
// svc from the bundle
// ---------------------------------------------------------------------------------------------------------------

/** The provider key svc sends upstream (the mock tells svc's requests from the bench's direct ones by it). */
export const UPSTREAM_KEY = 'bench';

export function svcEnv(mockUrl, extra = {}) {
  const env = {
    ...process.env,
    CHATCOMP_API_KEY: UPSTREAM_KEY,
    CHATCOMP_BASE_URL: `${mockUrl}/v1`,
    SVC_RATE_LIMIT_GATEWAY_PER_MINUTE: '10000000',
    SVC_RATE_LIMIT_API_PER_MINUTE: '10000000',
    // Protected mode, as svc is deployed: the bootstrap token mints the API key the bench's clients present
    // (authorizeClients).
    SVC_API_KEY: BOOTSTRAP_TOKEN,
    ...extra,
  };
  // Make sure the caller's shell does not change the mode or where svc listens (nor its start: NODE_EXTRA_CA_CERTS,
  // see withoutExtraCaCerts).
  for (const name of ['SVC_REQUIRE_LOGIN', 'SVC_BASE_URL', 'SVC_PORT', 'SVC_HOST', 'SVC_DATA_DIR', 'SVC_LOG_LEVEL', 'MESSAGES_API_KEY', 'CHATCOMP_FALLBACK_API_KEY', 'NODE_OPTIONS', 'SVC_TRACE_COMMITS', 'NODE_EXTRA_CA_CERTS']) {
    if (!(name in extra)) delete env[name];
  }
  return env;
}

/** svc's bootstrap token (SVC_API_KEY) in the bench: used only to create the clients' API key. */
export const BOOTSTRAP_TOKEN = 'svc-bench-bootstrap-token-00000000000001';

/** Create an API key on a running svc (with the bootstrap token); returns its `authorization` header value. */
export async function createClientKey(svcUrl) {
  const created = await postJson(svcUrl, '/api/v1/keys', { name: 'bench' }, { authorization: `Bearer ${BOOTSTRAP_TOKEN}` });
  if (created.status !== 201) throw new Error(`creating the bench's API key: ${created.status} ${created.body.slice(0, 500)}`);
  return `Bearer ${JSON.parse(created.body).token}`;
}

/**
 * Create an API key on a running svc and make every client of this process present it (CLIENT_HEADERS): gateway
 * traffic authenticated as an SDK's is in production, the key looked up on each request.
 */
export async function authorizeClients(svcUrl) {
  CLIENT_HEADERS.authorization = await createClientKey(svcUrl);
}

/**
 * Spawns `bin/svc serve --port 0 --data-dir <dir> --log-level silent` (`bin`: another checkout's bin/svc) as a user
 * runs it: executed, so its first line sets glibc's malloc thresholds and execs node (this process's node, put first
 * on PATH). With `nodeArgs` (the profile: `--cpu-prof` is not allowed in NODE_OPTIONS) it runs
 * `node [nodeArgs] bin/svc ...` instead, without those thresholds. cpus: '0' pins svc to CPU 0; 'all' runs it on every
 * CPU (a child would otherwise inherit this process's affinity); null runs it without taskset. taskset, sh and node
 * each replace the previous one (exec): one pid. Resolves {child, pid, url, listeningMs, spawnedAt, exited} once the
 * `svc listening on` line is printed.
 */
export function startSvc({ mockUrl, dataDir, cpus = PINNED ? '0' : null, nodeArgs = [], env = {}, timeoutMs = 30_000, bin = SVC_BIN }) {
  const launcher = nodeArgs.length > 0 ? [process.execPath, ...nodeArgs, bin] : [bin];
  const argv = [...launcher, 'serve', '--port', '0', '--data-dir', dataDir, '--log-level', 'silent'];
  const cpuList = cpus === 'all' ? `0-${CPUS - 1}` : cpus;
  const [command, ...args] = onCpus(argv, cpuList);
  const childEnv = svcEnv(mockUrl, env);
  childEnv.PATH = `${dirname(process.execPath)}${delimiter}${childEnv.PATH ?? ''}`;
  const spawnedAt = performance.now();
  const child = spawn(command, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    if (stderr.length > 20_000) stderr = stderr.slice(-20_000);
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc did not print its listening line within ${timeoutMs} ms; stderr: ${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /svc listening on (http:\/\/\S+) \(data (.*)\)/.exec(out);
      if (match && timer) {
        clearTimeout(timer);
        resolve({ child, pid: child.pid, url: match[1], spawnedAt, listeningMs: performance.now() - spawnedAt, exited, stderr: () => stderr });
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`svc exited before listening (code ${code}, signal ${signal}); stderr: ${stderr.slice(-2000)}`));
    });
  });
}

/** SIGTERM, wait for the exit (SIGKILL after timeoutMs). Returns {code, signal, ms, killed}. */
export async function stopSvc(svc, timeoutMs = 35_000) {
  const started = performance.now();
  if (svc.child.exitCode !== null || svc.child.signalCode !== null) return { ...(await svc.exited), ms: 0, killed: false };
  svc.child.kill('SIGTERM');
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    svc.child.kill('SIGKILL');
  }, timeoutMs);
  const result = await svc.exited;
  clearTimeout(timer);
  return { ...result, ms: round(performance.now() - started, 1), killed };
}

/** VmRSS of a process in MB (one decimal), or null when it is gone. */
export function rssMb(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? round(Number(match[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

/** Status of GET /health with a fresh node:http connection (0 on a connection error). */
export function healthStatus(baseUrl) {
  return new Promise((resolve) => {
    const req = http.get(`${baseUrl}/health`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
      res.on('error', () => resolve(0));
    });
    req.on('error', () => resolve(0));
  });
}

/** One POST with node:http; resolves {status, headers, body}. */
export function postJson(baseUrl, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const payload = typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(`${baseUrl}${path}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------------------------------------------

let sequence = 0;
/** A chat body; `unique` makes the prompt differ per call so the exact cache never serves it. */
export function chatBody({ stream = false, unique = true, content } = {}) {
  const text = content ?? (unique ? `Summarise bench item ${process.pid}-${sequence++} in one sentence.` : 'Summarise the cached bench item in one sentence.');
  const body = { model: MODEL, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: text }], temperature: 0 };
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return JSON.stringify(body);
}

/**
 * Headers of a gateway client. The key is a placeholder (which the mock, like open dev mode, accepts) until
 * authorizeClients sets the svc API key the bench created.
 */
export const CLIENT_HEADERS = { 'content-type': 'application/json', authorization: 'Bearer sdk-placeholder' };

// ---------------------------------------------------------------------------------------------------------------
// Load: autocannon with per-request latencies
// ---------------------------------------------------------------------------------------------------------------

/**
 * One autocannon run against POST {baseUrl}/v1/chat/completions. autocannon's own histogram keeps whole
 * milliseconds (lowestDiscernibleValue 1), too coarse for a sub-millisecond overhead, so the latency of every
 * response is taken from its 'response' event (hrtime, float ms) instead; throughput is 2xx responses / wall time.
 * `next()` returns each request's `{body, headers?}` (extra headers on top of CLIENT_HEADERS).
 */
export async function cannon(baseUrl, { connections, duration, amount, next }) {
  const latencies = [];
  const statuses = {};
  const opts = {
    url: `${baseUrl}/v1/chat/completions`,
    method: 'POST',
    connections,
    pipelining: 1,
    timeout: 30,
    headers: CLIENT_HEADERS,
    requests: [
      {
        setupRequest: (request) => {
          const { body, headers } = next();
          return headers ? { ...request, body, headers: { ...request.headers, ...headers } } : { ...request, body };
        },
      },
    ],
  };
  if (amount) opts.amount = amount;
  else opts.duration = duration;
  // autocannon stops on its next 1-second sample tick after `duration`, and clients idle while it winds down, so
  // the wall time of the call overstates the measuring time: throughput is responses over the span from the first
  // request's start (first response minus its latency) to the last response.
  let firstStart = null;
  let lastEnd = null;
  const instance = autocannon(opts);
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    const now = performance.now();
    firstStart ??= now - responseTime;
    lastEnd = now;
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
    latencies.push(responseTime);
  });
  const result = await instance;
  const seconds = firstStart === null ? 0 : (lastEnd - firstStart) / 1000;
  let ok = 0;
  for (const [code, n] of Object.entries(statuses)) if (Number(code) >= 200 && Number(code) < 300) ok += n;
  return { latencies, ok, seconds, rps: seconds ? ok / seconds : 0, non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts, statuses };
}

/** Several cannon() runs of the same target merged: latencies concatenated, throughput over the summed time. */
export function mergeRuns(runs) {
  const latencies = runs.flatMap((r) => r.latencies);
  const ok = runs.reduce((n, r) => n + r.ok, 0);
  const seconds = runs.reduce((n, r) => n + r.seconds, 0);
  const statuses = {};
  for (const r of runs) for (const [code, n] of Object.entries(r.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  return {
    rps: seconds ? round(ok / seconds, 0) : 0,
    requests: ok,
    ...pick(summarize(latencies), ['p50', 'p90', 'p99', 'max', 'mean']),
    non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors + r.timeouts, 0),
    statuses,
  };
}

export function pick(object, keys) {
  return Object.fromEntries(keys.map((k) => [k, object[k]]));
}

// ---------------------------------------------------------------------------------------------------------------
// Streaming probe: time to first body byte and to last byte, per request
// ---------------------------------------------------------------------------------------------------------------

/**
 * `concurrency` closed-loop workers on one undici Pool send `requests` streamed chat requests in total. For each:
 * time to the response headers, to the first body chunk (TTFB) and to the end of the body (TTLB), from the moment
 * the request was handed to the pool. A response counts as a failure unless it is 200 and ends with `data: [DONE]`.
 * `onChunk(text, now)` sees every body chunk (the relay check).
 */
export async function streamProbe(baseUrl, { concurrency, requests, body = () => chatBody({ stream: true }), extraHeaders = {}, onChunk = null, onDone = null }) {
  const pool = new Pool(baseUrl, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  // Every connection opened before the clock starts: Node 20's libuv accepts one connection per event-loop turn, so
  // 64 new connections to a server busy with the first ones' streams are accepted over ~64 of its turns (~0.4 s here),
  // a start-up of the client's pool that would otherwise land in every round's p99 (docs/performance-notes.md, "New
  // connections under load"). Any answer opens one (the mock's is a 404).
  await Promise.all(Array.from({ length: concurrency }, async () => (await pool.request({ path: '/health', method: 'GET' })).body.dump()));
  const ttfb = [];
  const ttlb = [];
  const headersAt = [];
  let failures = 0;
  const failureSamples = [];
  let issued = 0;
  const started = performance.now();
  const worker = async () => {
    while (issued < requests) {
      issued += 1;
      const t0 = performance.now();
      try {
        const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: { ...CLIENT_HEADERS, ...extraHeaders }, body: body() });
        const th = performance.now();
        let first = null;
        let tail = '';
        for await (const chunk of res.body) {
          const now = performance.now();
          first ??= now;
          const text = chunk.toString('utf8');
          onChunk?.(text, now);
          tail = (tail + text).slice(-64);
        }
        const end = performance.now();
        const complete = res.statusCode === 200 && tail.trimEnd().endsWith('data: [DONE]');
        onDone?.({ t0, first, end, status: res.statusCode });
        if (!complete) {
          failures += 1;
          if (failureSamples.length < 3) failureSamples.push(`status ${res.statusCode}, tail ${JSON.stringify(tail)}`);
          continue;
        }
        headersAt.push(th - t0);
        ttfb.push((first ?? end) - t0);
        ttlb.push(end - t0);
      } catch (error) {
        failures += 1;
        if (failureSamples.length < 3) failureSamples.push(String(error?.message ?? error));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.close();
  return { ttfb, ttlb, headers: headersAt, failures, failureSamples, ok: ttlb.length, seconds };
}

// ---------------------------------------------------------------------------------------------------------------
// svc CPU time
// ---------------------------------------------------------------------------------------------------------------

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** User + system CPU time a process has used so far, in ms (clock-tick resolution, usually 10 ms), or null. */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Command lines; two builds compared (ab.mjs, fresh.mjs)
// ---------------------------------------------------------------------------------------------------------------

/** The value after `name` on a command line, or `fallback`. */
export function cliOption(argv, name, fallback) {
  const at = argv.indexOf(name);
  return at >= 0 && at + 1 < argv.length ? argv[at + 1] : fallback;
}

/**
 * The two builds of an A/B from its command line: `--a <bin/svc>` (required), `--b <bin/svc>` (default this checkout's)
 * and `--a-env` / `--b-env` (JSON objects of environment variables added to one side: a switch read by a build under
 * test).
 */
export function comparedBuilds(argv) {
  const bins = { A: cliOption(argv, '--a'), B: cliOption(argv, '--b', join(ROOT, 'bin', 'svc')) };
  if (!bins.A) throw new Error('--a <path to bin/svc> is required (the build to compare bin/svc with)');
  const envs = { A: JSON.parse(cliOption(argv, '--a-env', '{}')), B: JSON.parse(cliOption(argv, '--b-env', '{}')) };
  return { bins, envs };
}

// ---------------------------------------------------------------------------------------------------------------
// The ledger's windows as svc noted them (SVC_TRACE_COMMITS)
// ---------------------------------------------------------------------------------------------------------------

/** The windows an svc run with SVC_TRACE_COMMITS noted (`<ms> <timed|held>` per line), in the order committed. */
export function tracedWindows(path) {
  const lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter((line) => line.trim() !== '') : [];
  // The rule's window runs from the first write queued while answers went out before their commit (the third field;
  // `-`: all of the window's answers waited for it, so none could be lost); older traces have two fields.
  const windows = lines.map((line) => {
    const [length, how, exposed] = line.split(' ');
    return { ms: exposed === undefined ? Number(length) : exposed === '-' ? 0 : Number(exposed), held: how === 'held', waited: exposed === '-' };
  });
  return {
    count: windows.length,
    /** Windows whose answers all waited for their commit. */
    answersWaited: windows.filter((w) => w.waited).length,
    past20Ms: windows.filter((w) => w.ms > 20).length,
    held: windows.filter((w) => w.held).length,
    heldPast20Ms: windows.filter((w) => w.held && w.ms > 20).length,
    longestMs: Math.max(0, ...windows.map((w) => w.ms)),
    /** Where in the sequence each window past 20 ms came (0: the process's first). */
    past20MsAt: windows.flatMap((w, i) => (w.ms > 20 ? [i] : [])),
  };
}

/**
 * Node reads every certificate NODE_EXTRA_CA_CERTS names when it starts, whether or not the process ever opens a TLS
 * connection: with the 220 KB system bundle some images set it to, ~0.1 s of CPU per start on the Intel VM of the
 * fortieth to forty-second sessions, a fifth of svc's cold start there. The bench reaches only loopback over plain
 * HTTP, so it removes the variable from its own environment, which every svc and node it starts inherits (svcEnv
 * drops it too, for ab.mjs), and says what it cost: the median of 3 bare `node -e 0` runs with it, less without.
 * Null when it is not set.
 */
export function withoutExtraCaCerts() {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (!file) return null;
  const bareMs = (env) => {
    const times = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore', env });
      times.push(performance.now() - t0);
    }
    return median(times);
  };
  const withIt = bareMs(process.env);
  delete process.env.NODE_EXTRA_CA_CERTS;
  return { file, perStartMs: round(withIt - bareMs(process.env), 0) };
}
