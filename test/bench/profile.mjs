#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (`node --cpu-prof`): self time aggregated by function + url:line, top N.
 * Locations in a bundle (dist/serve.cjs, dist/svc.cjs) are mapped back to src/ through its .map file when it exists.
 *
 *   node test/bench/profile.mjs /tmp/svc-prof/CPU.<...>.cpuprofile [--top 15]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, round } from './lib.mjs';

const SPECIAL = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function sourceMapFor(url, cache) {
  if (!url.startsWith('file://')) return null;
  if (cache.has(url)) return cache.get(url);
  let map = null;
  try {
    const file = fileURLToPath(url);
    if (existsSync(`${file}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
  } catch {
    map = null;
  }
  cache.set(url, map);
  return map;
}

function location(frame, maps) {
  const { url, lineNumber, columnNumber } = frame;
  if (!url) return '';
  const map = sourceMapFor(url, maps);
  if (map && lineNumber >= 0) {
    const entry = map.findEntry(lineNumber, Math.max(0, columnNumber));
    if (entry && entry.originalSource) {
      let source = entry.originalSource;
      if (source.startsWith('file://')) source = fileURLToPath(source);
      source = source.replace(/^(\.\.\/)+/, '');
      if (source.startsWith('/')) source = relative(ROOT, source);
      return `${source}:${entry.originalLine + 1}`;
    }
  }
  let path = url;
  if (path.startsWith('file://')) path = relative(ROOT, fileURLToPath(path));
  return `${path}:${lineNumber + 1}`;
}

/** {totalMs, idleMs, busyMs, gcMs, top: [{rank, function, location, selfMs, pctTotal, pctBusy}]} */
export function summarizeProfile(file, { top = 15 } = {}) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i++) {
    // Sample i lasts until the next sample (the next delta); the last one until endTime.
    const dt = i + 1 < timeDeltas.length ? timeDeltas[i + 1] : Math.max(0, profile.endTime - (profile.startTime + timeDeltas.reduce((a, b) => a + b, 0)));
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, dt));
  }
  const maps = new Map();
  const agg = new Map();
  let totalUs = 0;
  let idleUs = 0;
  let gcUs = 0;
  let programUs = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id).callFrame;
    totalUs += us;
    const name = frame.functionName || '(anonymous)';
    if (name === '(idle)') idleUs += us;
    if (name === '(garbage collector)') gcUs += us;
    if (name === '(program)') programUs += us;
    const key = SPECIAL.has(name) ? name : `${name}\u0000${location(frame, maps)}`;
    agg.set(key, (agg.get(key) ?? 0) + us);
  }
  const busyUs = totalUs - idleUs;
  // Inclusive (total) time of svc's own functions (src/...): each sample counts once for every function on its stack.
  const parent = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const keyOf = new Map();
  const keyFor = (id) => {
    if (!keyOf.has(id)) {
      const frame = byId.get(id).callFrame;
      const loc = location(frame, maps);
      keyOf.set(id, loc.startsWith('src/') ? `${frame.functionName || '(anonymous)'}\u0000${loc}` : null);
    }
    return keyOf.get(id);
  };
  const inclusive = new Map();
  for (const [id, us] of selfUs) {
    const seen = new Set();
    for (let node = id; node !== undefined; node = parent.get(node)) {
      const key = keyFor(node);
      if (key && !seen.has(key)) {
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + us);
      }
    }
  }
  const topInclusive = [...inclusive.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us]) => {
      const [fn, loc] = key.split('\u0000');
      return { function: fn, location: loc, totalMs: round(us / 1000, 1), pctBusy: round((100 * us) / busyUs, 1) };
    });
  // Self time per source file (natives without a script, such as fsync or writev, under "(native)").
  const files = new Map();
  for (const [key, us] of agg) {
    if (key === '(idle)') continue;
    const [fn, loc] = key.split('\u0000');
    const file = SPECIAL.has(fn) ? fn : loc ? loc.replace(/:\d+$/, '') : '(native)';
    files.set(file, (files.get(file) ?? 0) + us);
  }
  const byFile = [...files.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([file, us]) => ({ file, selfMs: round(us / 1000, 1), pctBusy: round((100 * us) / busyUs, 1) }));
  const rows = [...agg.entries()]
    .filter(([key]) => key !== '(idle)')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, us], i) => {
      const [fn, loc = ''] = key.split('\u0000');
      return { rank: i + 1, function: fn, location: loc, selfMs: round(us / 1000, 1), pctTotal: round((100 * us) / totalUs, 1), pctBusy: round((100 * us) / busyUs, 1) };
    });
  return { totalMs: round(totalUs / 1000, 0), idleMs: round(idleUs / 1000, 0), busyMs: round(busyUs / 1000, 0), gcMs: round(gcUs / 1000, 0), programMs: round(programUs / 1000, 0), top: rows, byFile, topInclusive };
}

export function printProfile(summary) {
  console.log(`  sampled ${summary.totalMs} ms: busy ${summary.busyMs} ms, idle ${summary.idleMs} ms, GC ${summary.gcMs} ms, (program) ${summary.programMs} ms`);
  const fnWidth = Math.min(48, Math.max(8, ...summary.top.map((r) => r.function.length)));
  console.log(`  ${'#'.padStart(2)}  ${'self ms'.padStart(8)}  ${'% busy'.padStart(6)}  ${'function'.padEnd(fnWidth)}  location`);
  for (const r of summary.top) {
    console.log(`  ${String(r.rank).padStart(2)}  ${String(r.selfMs).padStart(8)}  ${String(r.pctBusy).padStart(6)}  ${r.function.slice(0, fnWidth).padEnd(fnWidth)}  ${r.location}`);
  }
  if (summary.topInclusive) {
    console.log('  total (inclusive) time of svc functions (src/):');
    for (const f of summary.topInclusive) console.log(`      ${String(f.totalMs).padStart(8)}  ${String(f.pctBusy).padStart(6)}  ${f.function.slice(0, 40).padEnd(40)}  ${f.location}`);
  }
  if (summary.byFile) {
    console.log('  self time by file:');
    for (const f of summary.byFile) console.log(`      ${String(f.selfMs).padStart(8)}  ${String(f.pctBusy).padStart(6)}  ${f.file}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node test/bench/profile.mjs <file.cpuprofile> [--top N]');
    process.exit(2);
  }
  const topIndex = process.argv.indexOf('--top');
  const summary = summarizeProfile(file, { top: topIndex > 0 ? Number(process.argv[topIndex + 1]) : 15 });
  printProfile(summary);
}
