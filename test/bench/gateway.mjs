/**
 * Gateway sections of `npm run bench` (issue 7 items 1 and 4; docs/performance.md). Each section takes the shared
 * context `ctx` = {quick, mock, svc, dataDir, fail(message)} built by run.mjs, returns its figures (plain JSON), and
 * has a print function for its table. A (client -> mock) and B (client -> svc -> mock) are interleaved.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  CLIENT_HEADERS,
  authorizeClients,
  CPUS,
  PINNED,
  cannon,
  chatBody,
  cpuMs,
  healthStatus,
  median,
  mergeRuns,
  postJson,
  round,
  rssMb,
  sleep,
  startSvc,
  stopSvc,
  streamProbe,
  summarize,
} from './lib.mjs';
import { summarizeProfile, printProfile } from './profile.mjs';

/** Durations and counts; BENCH_QUICK=1 shrinks everything so the gateway part runs in well under a minute. */
export function plan(quick) {
  return quick
    ? { svcWarmupSeconds: 2, warmupSeconds: 0.5, rounds: 1, roundSeconds: 1, streamRequests: { 1: 200, 16: 800, 64: 1_000 }, streamWarmupRequests: { 1: 100, 16: 80, 64: 100 }, cacheSeconds: 1, soakRequests: 10_000, coldStarts: 3, profileSeconds: 5 }
    : { svcWarmupSeconds: 15, warmupSeconds: 2, rounds: 2, roundSeconds: 3, streamRequests: { 1: 2_000, 16: 6_000, 64: 8_000 }, streamWarmupRequests: { 1: 4_000, 16: 600, 64: 800 }, cacheSeconds: 6, soakRequests: 100_000, coldStarts: 5, profileSeconds: 20 };
}

const live = () => ({ body: chatBody({ unique: true }) });

/**
 * Load through svc before anything is measured: svc's throughput keeps rising for the first ~10 s of traffic (JIT
 * tiers, the data file's first pages), and the figures are meant for a server in its steady state; the start-up
 * itself is the cold-start figure. Then one sanity request: a new body must take the live route and reach the mock.
 */
export async function warmUp(ctx) {
  const p = plan(ctx.quick);
  await cannon(ctx.mock.url, { connections: 8, duration: p.warmupSeconds, next: live });
  const b = await cannon(ctx.svc.url, { connections: 8, duration: p.svcWarmupSeconds, next: live });
  if (b.non2xx || b.errors || b.timeouts) ctx.fail(`warm-up through svc: ${b.non2xx} non-2xx, ${b.errors + b.timeouts} errors (${JSON.stringify(b.statuses)})`);
  // Is the live route really live, and does the cache serve a repeat? One of each, checked by header and mock counter.
  const marker = `sanity-${process.pid}-${Date.now()}`;
  ctx.mock.state.marker = marker;
  ctx.mock.state.marked = 0;
  const body = chatBody({ content: `Say hello (${marker}).` });
  const first = await postJson(ctx.svc.url, '/v1/chat/completions', body, CLIENT_HEADERS);
  await sleep(50);
  const reached = ctx.mock.state.marked;
  ctx.mock.state.marker = null;
  if (first.status !== 200 || first.headers['x-svc-route'] !== 'live' || reached !== 1) {
    ctx.fail(`sanity: a new body through svc answered ${first.status}, route ${first.headers['x-svc-route']}, reached the upstream ${reached} times: ${first.body.slice(0, 300)}`);
  }
  return { seconds: p.svcWarmupSeconds, warmupRequestsThroughSvc: b.ok, warmupRps: round(b.rps, 0), sanityRoute: first.headers['x-svc-route'], sanityUpstreamHits: reached };
}

// -----------------------------------------------------------------------------------------------------------------
// Buffered, live route
// -----------------------------------------------------------------------------------------------------------------

/**
 * What svc spent over its B rounds: `measure(round)` runs one and adds svc's CPU, the mock's count of svc's calls and
 * svc's highest RSS (sampled every 250 ms) to the totals.
 */
function svcTotals(ctx) {
  const totals = { cpuMs: 0, upstreamHits: 0, rssMaxMb: 0 };
  const measure = async (round) => {
    const hits = ctx.mock.state.svcHits;
    const cpu = cpuMs(ctx.svc.pid);
    const sampler = setInterval(() => (totals.rssMaxMb = Math.max(totals.rssMaxMb, rssMb(ctx.svc.pid) ?? 0)), 250);
    try {
      return await round();
    } finally {
      clearInterval(sampler);
      totals.cpuMs += cpuMs(ctx.svc.pid) - cpu;
      totals.upstreamHits += ctx.mock.state.svcHits - hits;
    }
  };
  return { totals, measure };
}

/**
 * Per concurrency: a short warm-up of A and B, then `rounds` alternating A/B measurements, merged. Every body is
 * unique (a new prompt per request), so B takes svc's live route in full: cache lookup (miss), upstream call, run
 * ledger, cache write. The mock's counter must grow by one per B response (checked: upstreamHitsPerResponse).
 */
export async function bufferedSection(ctx) {
  const p = plan(ctx.quick);
  const out = {};
  for (const c of [1, 16, 64]) {
    await cannon(ctx.mock.url, { connections: c, duration: p.warmupSeconds / 2, next: live });
    await cannon(ctx.svc.url, { connections: c, duration: p.warmupSeconds, next: live });
    const runsA = [];
    const runsB = [];
    const { totals, measure } = svcTotals(ctx);
    for (let round_ = 0; round_ < p.rounds; round_++) {
      runsA.push(await cannon(ctx.mock.url, { connections: c, duration: p.roundSeconds, next: live }));
      runsB.push(await measure(() => cannon(ctx.svc.url, { connections: c, duration: p.roundSeconds, next: live })));
    }
    const A = mergeRuns(runsA);
    const B = mergeRuns(runsB);
    if (A.non2xx || A.errors) ctx.fail(`buffered c=${c} A (direct to the mock): ${A.non2xx} non-2xx, ${A.errors} errors`);
    if (B.non2xx || B.errors) ctx.fail(`buffered c=${c} B (through svc): ${B.non2xx} non-2xx, ${B.errors} errors (${JSON.stringify(B.statuses)})`);
    out[`c${c}`] = {
      A,
      B,
      addedMs: { p50: round(B.p50 - A.p50, 3), p90: round(B.p90 - A.p90, 3), p99: round(B.p99 - A.p99, 3) },
      rpsRatio: round(B.rps / A.rps, 3),
      svcRssMb: rssMb(ctx.svc.pid),
      svcRssMaxMb: totals.rssMaxMb || null,
      svcCpuMsPerRequest: round(totals.cpuMs / B.requests, 3),
      upstreamHitsPerResponse: round(totals.upstreamHits / B.requests, 3),
    };
  }
  return out;
}

export function printBuffered(r) {
  console.log('\nBuffered chat completions, live route (latency in ms; A = client -> mock, B = client -> svc -> mock)');
  table(
    ['conc', 'A rps', 'B rps', 'B/A', 'A p50', 'A p90', 'A p99', 'B p50', 'B p90', 'B p99', '+p50', '+p99', 'svc RSS MB', 'svc CPU ms/req'],
    Object.entries(r).map(([c, f]) => [c.slice(1), f.A.rps, f.B.rps, f.rpsRatio, f.A.p50, f.A.p90, f.A.p99, f.B.p50, f.B.p90, f.B.p99, f.addedMs.p50, f.addedMs.p99, `${f.svcRssMb} (max ${f.svcRssMaxMb})`, f.svcCpuMsPerRequest]),
  );
  const counts = Object.entries(r).map(([c, f]) => `c=${c.slice(1)}: A ${f.A.requests}, B ${f.B.requests} (upstream hits per B response ${f.upstreamHitsPerResponse})`);
  console.log(`  responses measured: ${counts.join('; ')}`);
}

// -----------------------------------------------------------------------------------------------------------------
// Streaming
// -----------------------------------------------------------------------------------------------------------------

/**
 * `stream: true` with `stream_options.include_usage`, unique bodies, at concurrency 1, 16 and 64 as the buffered
 * section. TTFB = first body chunk, TTLB = end of the body (after `data: [DONE]`), both from the moment the request
 * was handed to the client pool; per concurrency also streams a second (A, B, B/A), svc's RSS and its CPU per stream
 * over the B rounds, and the mock's count of svc's calls per B stream (one: each is a new prompt). Then the relay
 * check.
 */
export async function streamingSection(ctx) {
  const p = plan(ctx.quick);
  const out = {};
  for (const c of [1, 16, 64]) {
    const n = p.streamRequests[c];
    // The warm-up svc had was buffered requests only: its stream path (the relay, the SSE parser and frames) is still
    // being compiled by the JIT for the first few thousand streams, the added TTFB at c=1 falling from ~0.8 ms over
    // the first 250 streams to ~0.4 after ~3,000 (docs/performance-notes.md, "The streaming figure's warm-up"). What
    // those first streams saw is kept apart (`warmUp`), not mixed into the steady-state figure.
    const warm = p.streamWarmupRequests[c];
    const warmA = await streamProbe(ctx.mock.url, { concurrency: c, requests: warm });
    const warmB = await streamProbe(ctx.svc.url, { concurrency: c, requests: warm });
    if (warmB.failures) ctx.fail(`streaming c=${c} warm-up through svc: ${warmB.failures} failed or incomplete streams: ${warmB.failureSamples.slice(0, 3).join(' | ')}`);
    const [ttfbA, ttfbB] = [summarize(warmA.ttfb).p50, summarize(warmB.ttfb).p50];
    const warmUpFigures = { streams: warm, ttfbA, ttfbB, addedTtfbMs: round(ttfbB - ttfbA, 3) };
    const a = { ttfb: [], ttlb: [], ok: 0, seconds: 0, failures: 0 };
    const b = { ttfb: [], ttlb: [], ok: 0, seconds: 0, failures: 0, failureSamples: [] };
    const { totals, measure } = svcTotals(ctx);
    const probe = async (target, acc) => {
      const r = await streamProbe(target, { concurrency: c, requests: Math.round(n / p.rounds) });
      acc.ttfb.push(...r.ttfb);
      acc.ttlb.push(...r.ttlb);
      acc.ok += r.ok;
      acc.seconds += r.seconds;
      acc.failures += r.failures;
      acc.failureSamples?.push(...r.failureSamples);
    };
    for (let i = 0; i < p.rounds; i++) {
      await probe(ctx.mock.url, a);
      await measure(() => probe(ctx.svc.url, b));
    }
    if (a.failures) ctx.fail(`streaming c=${c} A (direct to the mock): ${a.failures} failed streams`);
    if (b.failures) ctx.fail(`streaming c=${c} B (through svc): ${b.failures} failed or incomplete streams: ${b.failureSamples.slice(0, 3).join(' | ')}`);
    const fig = (acc) => {
      const ttfb = summarize(acc.ttfb);
      const ttlb = summarize(acc.ttlb);
      return { streams: acc.ok, rps: round(acc.ok / acc.seconds, 0), ttfb: { p50: ttfb.p50, p90: ttfb.p90, p99: ttfb.p99 }, ttlb: { p50: ttlb.p50, p90: ttlb.p90, p99: ttlb.p99 }, failures: acc.failures };
    };
    const A = fig(a);
    const B = fig(b);
    const added = (of) => ({ p50: round(B[of].p50 - A[of].p50, 3), p90: round(B[of].p90 - A[of].p90, 3), p99: round(B[of].p99 - A[of].p99, 3) });
    out[`c${c}`] = {
      A,
      B,
      addedTtfbMs: added('ttfb'),
      addedTtlbMs: added('ttlb'),
      rpsRatio: round(B.rps / A.rps, 3),
      svcRssMb: rssMb(ctx.svc.pid),
      svcRssMaxMb: totals.rssMaxMb || null,
      svcCpuMsPerStream: round(totals.cpuMs / B.streams, 3),
      upstreamHitsPerStream: round(totals.upstreamHits / B.streams, 3),
      warmUp: warmUpFigures,
    };
    if (B.streams > 0 && Math.abs(totals.upstreamHits / B.streams - 1) > 0.01) ctx.fail(`streaming c=${c}: the mock saw ${totals.upstreamHits} calls from svc for ${B.streams} streams of new prompts (one each expected)`);
  }
  out.relay = await relayCheck(ctx);
  return out;
}

/**
 * Chunks relayed as they arrive: the mock sends 5 content chunks 20 ms apart. For each content chunk the client
 * must see it before the mock writes the next one (a relay that buffers until the end fails this at once), and the
 * client's first byte must come long before the mock's last chunk. 3 streams through svc.
 */
async function relayCheck(ctx) {
  const words = ['alfa', 'bravo', 'charlie', 'foxtrot', 'golf']; // none occurs in the SSE JSON itself
  const gapMs = 20;
  const savedWords = ctx.mock.state.words;
  ctx.mock.state.words = words;
  ctx.mock.state.chunkDelayMs = gapMs;
  const streams = [];
  try {
    for (let i = 0; i < 3; i++) {
      let text = '';
      const seenAt = new Array(words.length).fill(null);
      let firstByteAt = null;
      let t0 = null;
      const r = await streamProbe(ctx.svc.url, {
        concurrency: 1,
        requests: 1,
        onChunk: (chunk, now) => {
          firstByteAt ??= now;
          text += chunk;
          words.forEach((w, k) => {
            if (seenAt[k] === null && text.includes(w)) seenAt[k] = now;
          });
        },
        onDone: (info) => (t0 = info.t0),
      });
      const sent = ctx.mock.state.lastStream?.contentWrittenAt ?? [];
      if (r.failures || sent.length !== words.length || seenAt.some((t) => t === null)) {
        streams.push({ ok: false, reason: `failures ${r.failures}, mock wrote ${sent.length} chunks, client saw ${seenAt.filter((t) => t !== null).length}` });
        continue;
      }
      // Relayed as they arrive: the first content chunk reaches the client well before the mock writes the last one,
      // and the client's arrivals spread over at least half of the mock's writing time (a buffering relay: ~0).
      const beforeNext = seenAt.slice(0, -1).filter((t, k) => t < sent[k + 1]).length;
      const spreadRatio = (seenAt.at(-1) - seenAt[0]) / (sent.at(-1) - sent[0]);
      streams.push({
        ok: seenAt[0] < sent.at(-1) - gapMs && spreadRatio >= 0.5,
        firstByteMs: round(firstByteAt - t0, 2),
        firstContentMs: round(seenAt[0] - t0, 2),
        lastChunkWrittenMs: round(sent.at(-1) - t0, 2),
        relayDelayMs: seenAt.map((t, k) => round(t - sent[k], 2)),
        spreadRatio: round(spreadRatio, 2),
        chunksSeenBeforeNextWrite: `${beforeNext}/${words.length - 1}`,
      });
    }
  } finally {
    ctx.mock.state.chunkDelayMs = 0;
    ctx.mock.state.words = savedWords;
  }
  const relayedIncrementally = streams.length > 0 && streams.every((s) => s.ok);
  if (!relayedIncrementally) ctx.fail(`streaming relay check: chunks were not relayed as they arrived: ${JSON.stringify(streams)}`);
  return { chunks: words.length, gapMs, relayedIncrementally, streams };
}

export function printStreaming(r) {
  console.log('\nStreaming chat completions, live route (ms; TTFB = first body chunk, TTLB = end of body; A = client -> mock, B = client -> svc -> mock)');
  const rows = Object.entries(r).filter(([c]) => /^c\d+$/.test(c));
  const times = (of, added) => rows.map(([c, f]) => [c.slice(1), f.A[of].p50, f.A[of].p90, f.A[of].p99, f.B[of].p50, f.B[of].p90, f.B[of].p99, f[added].p50, f[added].p90, f[added].p99]);
  for (const [of, added, name] of [['ttfb', 'addedTtfbMs', 'TTFB'], ['ttlb', 'addedTtlbMs', 'TTLB']]) {
    table(['conc', ...['A', 'B', '+'].flatMap((side) => ['p50', 'p90', 'p99'].map((q) => `${side === '+' ? '+' : `${side} `}${name} ${q}`))], times(of, added));
  }
  table(
    ['conc', 'A str/s', 'B str/s', 'B/A', 'svc RSS MB', 'svc CPU ms/stream', 'upstream calls per B stream'],
    rows.map(([c, f]) => [c.slice(1), f.A.rps, f.B.rps, f.rpsRatio, `${f.svcRssMb} (max ${f.svcRssMaxMb})`, f.svcCpuMsPerStream, f.upstreamHitsPerStream]),
  );
  const warm = Object.entries(r)
    .filter(([c, f]) => /^c\d+$/.test(c) && f.warmUp)
    .map(([c, f]) => `c=${c.slice(1)}: ${f.warmUp.streams} streams, +TTFB p50 ${f.warmUp.addedTtfbMs} (A ${f.warmUp.ttfbA}, B ${f.warmUp.ttfbB})`);
  if (warm.length) console.log(`  warm-up streams before each row, not in it: ${warm.join('; ')}`);
  const s = r.relay.streams.find((x) => x.firstByteMs !== undefined);
  const detail = s ? ` (first stream: first byte at ${s.firstByteMs} ms, first content chunk at ${s.firstContentMs} ms, mock wrote its last chunk at ${s.lastChunkWrittenMs} ms; each chunk reached the client ${s.relayDelayMs.join('/')} ms after the mock wrote it, ${s.chunksSeenBeforeNextWrite} before the mock's next write)` : '';
  console.log(`  relayed incrementally (${r.relay.chunks} chunks ${r.relay.gapMs} ms apart, ${r.relay.streams.length} streams): ${r.relay.relayedIncrementally ? 'yes' : 'NO'}${detail}`);
}

// -----------------------------------------------------------------------------------------------------------------
// Exact-cache hits
// -----------------------------------------------------------------------------------------------------------------

/** One body sent once (miss, stored), then B only with that body at concurrency 1, 16 and 64; the mock must not be hit. */
export async function cacheSection(ctx) {
  const p = plan(ctx.quick);
  const body = chatBody({ content: `The one cached bench question (${process.pid}).` });
  const first = await postJson(ctx.svc.url, '/v1/chat/completions', body, CLIENT_HEADERS);
  if (first.status !== 200) ctx.fail(`cache priming request answered ${first.status}: ${first.body.slice(0, 300)}`);
  // The entry may be written by the group commit after the answer: repeat until it serves (recorded as repeatsToHit).
  let route = null;
  let repeats = 0;
  while (route !== 'exact_cache' && repeats < 40) {
    if (repeats) await sleep(25);
    repeats += 1;
    route = (await postJson(ctx.svc.url, '/v1/chat/completions', body, CLIENT_HEADERS)).headers['x-svc-route'];
  }
  if (route !== 'exact_cache') ctx.fail(`cache: a repeated identical body was answered with route ${route}, not exact_cache`);
  await sleep(200); // stragglers of earlier sections
  const hitsBefore = ctx.mock.state.svcHits;
  const out = { primingRoute: first.headers['x-svc-route'], repeatsToHit: repeats };
  const same = () => ({ body });
  for (const c of [1, 16, 64]) {
    await cannon(ctx.svc.url, { connections: c, duration: p.warmupSeconds / 2, next: same });
    const runs = [];
    const cpu = cpuMs(ctx.svc.pid);
    for (let i = 0; i < p.rounds; i++) runs.push(await cannon(ctx.svc.url, { connections: c, duration: p.cacheSeconds / p.rounds, next: same }));
    const B = mergeRuns(runs);
    if (B.non2xx || B.errors) ctx.fail(`cache c=${c}: ${B.non2xx} non-2xx, ${B.errors} errors (${JSON.stringify(B.statuses)})`);
    out[`c${c}`] = { ...B, svcCpuMsPerRequest: round((cpuMs(ctx.svc.pid) - cpu) / B.requests, 3), svcRssMb: rssMb(ctx.svc.pid) };
  }
  const last = await postJson(ctx.svc.url, '/v1/chat/completions', body, CLIENT_HEADERS);
  out.upstreamHitsBefore = hitsBefore;
  out.upstreamHitsAfter = ctx.mock.state.svcHits;
  out.upstreamUnchanged = out.upstreamHitsAfter === hitsBefore;
  out.routeAfter = last.headers['x-svc-route'];
  if (!out.upstreamUnchanged) ctx.fail(`cache: the upstream was hit ${out.upstreamHitsAfter - hitsBefore} times during the cache-hit runs`);
  return out;
}

export function printCache(r) {
  console.log('\nExact-cache hits (B only: the same body repeated; latency in ms)');
  table(
    ['conc', 'rps', 'p50', 'p90', 'p99', 'max', 'responses', 'svc RSS MB', 'svc CPU ms/req'],
    Object.entries(r)
      .filter(([c]) => /^c\d+$/.test(c))
      .map(([c, f]) => [c.slice(1), f.rps, f.p50, f.p90, f.p99, f.max, f.requests, f.svcRssMb, f.svcCpuMsPerRequest]),
  );
  console.log(`  mock upstream hit counter: before ${r.upstreamHitsBefore}, after ${r.upstreamHitsAfter} (${r.upstreamUnchanged ? 'unchanged' : 'CHANGED'}); route of a repeat: ${r.routeAfter}`);
}

// -----------------------------------------------------------------------------------------------------------------
// Soak
// -----------------------------------------------------------------------------------------------------------------

/**
 * p.soakRequests requests at concurrency 16: 90% new bodies (live), 5% one repeated body with X-Svc-Cache-Bypass
 * (live, refreshing the entry), 5% cache hits. svc's RSS is sampled every second; "upward" when the mean of the
 * 4th quarter of the samples is more than 5% above the 3rd quarter's.
 */
export async function soakSection(ctx) {
  const p = plan(ctx.quick);
  const hitBody = chatBody({ content: `Soak cached question (${process.pid}).` });
  const bypassBody = chatBody({ content: `Soak refreshed question (${process.pid}).` });
  await postJson(ctx.svc.url, '/v1/chat/completions', hitBody, CLIENT_HEADERS);
  let i = 0;
  const next = () => {
    const k = i++ % 20;
    if (k === 0) return { body: hitBody };
    if (k === 1) return { body: bypassBody, headers: { 'x-svc-cache-bypass': 'true' } };
    return live();
  };
  const samples = [{ t: 0, rss: rssMb(ctx.svc.pid) }];
  const started = performance.now();
  const timer = setInterval(() => samples.push({ t: round((performance.now() - started) / 1000, 1), rss: rssMb(ctx.svc.pid) }), 1000);
  const hits = ctx.mock.state.svcHits;
  const cpu = cpuMs(ctx.svc.pid);
  let r;
  try {
    r = await cannon(ctx.svc.url, { connections: 16, amount: p.soakRequests, next });
  } finally {
    clearInterval(timer);
  }
  samples.push({ t: round((performance.now() - started) / 1000, 1), rss: rssMb(ctx.svc.pid) });
  const rss = samples.map((s) => s.rss).filter((v) => v !== null);
  const quarterMean = (q) => {
    const part = rss.slice(Math.floor((q * rss.length) / 4), Math.floor(((q + 1) * rss.length) / 4));
    return part.length ? part.reduce((a, b) => a + b, 0) / part.length : null;
  };
  const q3 = quarterMean(2);
  const q4 = quarterMean(3);
  const growth = q3 && q4 ? q4 / q3 - 1 : 0;
  const lat = summarize(r.latencies);
  if (r.non2xx || r.errors || r.timeouts) ctx.fail(`soak: ${r.non2xx} non-2xx, ${r.errors + r.timeouts} errors (${JSON.stringify(r.statuses)})`);
  return {
    requests: r.ok + r.non2xx,
    ok: r.ok,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    seconds: round(r.seconds, 1),
    rps: round(r.rps, 0),
    p50: lat.p50,
    p99: lat.p99,
    upstreamHits: ctx.mock.state.svcHits - hits,
    svcCpuMsPerRequest: round((cpuMs(ctx.svc.pid) - cpu) / r.ok, 3),
    rssStartMb: rss[0],
    rssMiddleMb: rss[Math.floor(rss.length / 2)],
    rssEndMb: rss.at(-1),
    rssMaxMb: Math.max(...rss),
    rssQ3MeanMb: round(q3, 1),
    rssQ4MeanMb: round(q4, 1),
    q4VsQ3GrowthPct: round(growth * 100, 1),
    trend: growth > 0.05 ? 'upward' : 'flat',
    samples,
  };
}

export function printSoak(r) {
  console.log(`\nSoak through svc (concurrency 16; 90% new bodies, 5% cache-bypass refreshes, 5% cache hits)`);
  table(
    ['requests', 'rps', 'p50', 'p99', 'RSS start', 'RSS middle', 'RSS end', 'RSS max', 'Q3 mean', 'Q4 mean', 'Q4 vs Q3', 'trend'],
    [[r.requests, r.rps, r.p50, r.p99, r.rssStartMb, r.rssMiddleMb, r.rssEndMb, r.rssMaxMb, r.rssQ3MeanMb, r.rssQ4MeanMb, `${r.q4VsQ3GrowthPct}%`, r.trend]],
  );
  console.log(`  ${r.seconds} s, ${r.non2xx} non-2xx, ${r.errors} errors, ${r.upstreamHits} upstream hits, svc CPU ${r.svcCpuMsPerRequest} ms per request; RSS in MB sampled every second (${r.samples.length} samples)`);
}

// -----------------------------------------------------------------------------------------------------------------
// Cold start
// -----------------------------------------------------------------------------------------------------------------

/**
 * `node bin/svc serve --port 0` on a fresh, empty data directory, p.coldStarts times, on every CPU (a server is not
 * pinned to start it, and node's start-up uses helper threads). Time from spawn to the listening line, and to the
 * first 200 on GET /health polled every 5 ms from the moment the line appears.
 */
export async function coldStartSection(ctx) {
  const p = plan(ctx.quick);
  const toHealth = [];
  const toListening = [];
  for (let i = 0; i < p.coldStarts; i++) {
    const dir = mkdtempSync(join(os.tmpdir(), 'svc-bench-cold-'));
    let svc = null;
    try {
      svc = await startSvc({ mockUrl: ctx.mock.url, dataDir: dir, cpus: PINNED ? 'all' : null });
      toListening.push(svc.listeningMs);
      let status = 0;
      const deadline = performance.now() + 10_000;
      while ((status = await healthStatus(svc.url)) !== 200 && performance.now() < deadline) await sleep(5);
      if (status !== 200) ctx.fail(`cold start ${i + 1}: /health never answered 200 (last ${status})`);
      else toHealth.push(performance.now() - svc.spawnedAt);
    } catch (error) {
      ctx.fail(`cold start ${i + 1}: ${error.message}`);
    } finally {
      if (svc) {
        const stopped = await stopSvc(svc);
        if (stopped.code !== 0) ctx.fail(`cold start ${i + 1}: svc exited with ${stopped.code ?? stopped.signal} after SIGTERM`);
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }
  // For scale: a bare `node -e 0` on this machine, spawn to exit.
  const bare = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    if (PINNED) spawnSync('taskset', ['-c', `0-${CPUS - 1}`, process.execPath, '-e', '0'], { stdio: 'ignore' });
    else spawnSync(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    bare.push(performance.now() - t0);
  }
  return {
    runs: toHealth.length,
    cpus: PINNED ? 'all' : 'unpinned',
    bareNodeMs: round(median(bare), 0),
    toHealthMs: { median: round(median(toHealth), 0), max: round(Math.max(...toHealth), 0), all: toHealth.map((t) => round(t, 0)) },
    toListeningLineMs: { median: round(median(toListening), 0), max: round(Math.max(...toListening), 0) },
  };
}

export function printColdStart(r) {
  console.log(`\nCold start of bin/svc serve, empty data directory (${r.runs} runs, ms)`);
  table(['to /health 200 median', 'max', 'all', 'to listening line median', 'max', 'bare `node -e 0`'], [[r.toHealthMs.median, r.toHealthMs.max, r.toHealthMs.all.join(' '), r.toListeningLineMs.median, r.toListeningLineMs.max, r.bareNodeMs]]);
}

// -----------------------------------------------------------------------------------------------------------------
// Profile (BENCH_PROFILE=1 or --profile): svc under --cpu-prof, buffered live traffic at concurrency 16
// (BENCH_PROFILE_CONCURRENCY), or streams (BENCH_PROFILE_STREAM=1), or exact-cache hits (BENCH_PROFILE_CACHE=1: one
// body, repeated; the first answer stores it)
// -----------------------------------------------------------------------------------------------------------------

export async function profileSection(ctx, { dir = process.env.BENCH_PROFILE_DIR || '/tmp/svc-prof', top = 15 } = {}) {
  const p = plan(ctx.quick);
  const connections = Number(process.env.BENCH_PROFILE_CONCURRENCY) || 16;
  const stream = process.env.BENCH_PROFILE_STREAM === '1';
  const cached = !stream && process.env.BENCH_PROFILE_CACHE === '1';
  const repeated = { body: chatBody({ content: `The one profiled cached question (${process.pid}).` }) };
  const next = stream ? () => ({ body: chatBody({ stream: true, unique: true }) }) : cached ? () => repeated : live;
  const dataDir = mkdtempSync(join(os.tmpdir(), 'svc-bench-prof-'));
  const before = new Set(safeList(dir));
  // Pinned to one CPU, executed bin/svc runs node with --single-threaded-gc; this node is started directly, so it
  // gets the flag here.
  const gcFlags = PINNED ? ['--single-threaded-gc'] : [];
  const svc = await startSvc({ mockUrl: ctx.mock.url, dataDir, nodeArgs: [...gcFlags, '--cpu-prof', `--cpu-prof-dir=${dir}`] });
  let load;
  try {
    await authorizeClients(svc.url);
    await cannon(svc.url, { connections, duration: p.svcWarmupSeconds, next }); // steady state first
    load = await cannon(svc.url, { connections, duration: p.profileSeconds, next });
    if (load.non2xx || load.errors) ctx.fail(`profile run: ${load.non2xx} non-2xx, ${load.errors} errors`);
  } finally {
    const stopped = await stopSvc(svc);
    if (stopped.code !== 0) ctx.fail(`profiled svc exited with ${stopped.code ?? stopped.signal} after SIGTERM`);
    rmSync(dataDir, { recursive: true, force: true });
  }
  const file = safeList(dir)
    .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
    .map((f) => join(dir, f))
    .sort((x, y) => statSync(y).mtimeMs - statSync(x).mtimeMs)[0];
  if (!file) {
    ctx.fail(`no .cpuprofile written to ${dir}`);
    return null;
  }
  const summary = summarizeProfile(file, { top });
  return { file, seconds: p.profileSeconds, concurrency: connections, stream, cached, requests: load.ok, rps: round(load.rps, 0), ...summary };
}

export function printProfileSection(r) {
  if (!r) return;
  console.log(`\nCPU profile of svc (${r.requests} ${r.stream ? 'streamed live' : r.cached ? 'exact-cache hit' : 'buffered live'} requests at concurrency ${r.concurrency} over ${r.seconds} s, ${r.rps} rps; ${r.file})`);
  printProfile(r);
}

function safeList(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

// -----------------------------------------------------------------------------------------------------------------

/** Right-aligned columns; `leftFirst` left-aligns the first one (names). */
export function table(head, rows, { leftFirst = false } = {}) {
  const cells = [head, ...rows].map((row) => row.map((v) => (v === null || v === undefined ? '-' : typeof v === 'number' ? v.toLocaleString('en-US', { maximumFractionDigits: 3 }) : String(v))));
  const widths = head.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  for (const [n, row] of cells.entries()) {
    console.log('  ' + row.map((v, i) => (leftFirst && i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  '));
    if (n === 0) console.log('  ' + widths.map((w) => '-'.repeat(w)).join('  '));
  }
}
