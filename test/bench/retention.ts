/**
 * Cost of a retention pass (docs/gateway.md "Retention", docs/performance-notes.md): a data file of BENCH_RUNS
 * expired runs (default 200,000, each with BENCH_EVENTS trace events, default 4, its attempts and a replay bundle) and
 * BENCH_CACHE_ENTRIES expired cache entries (default 50,000), generated through the store as test/bench/store.ts does
 * (generateRuns), not over HTTP, the runs left running finished as interrupted (as `svc serve` does at start). The
 * store is reopened (as by a process started again: its page cache cold, the pass's statements not yet run), then a pass runs
 * through the services while this prints each write's CPU time (p50/p99/max, the runs' and the cache's apart, and
 * the first ones) and the longest pause of the event loop (perf_hooks monitorEventLoopDelay), with the machine's
 * load average, since on a shared machine wall times include time the process was not running at all.
 * Run with: node --import tsx test/bench/retention.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { PRUNE_WRITE_MS } from '../../src/evidence/repo.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices } from '../../src/services.ts';
import type { Sql, SqlParams } from '../../src/store/sql.ts';
import { openStore, type Store } from '../../src/store/store.ts';
import { overriding } from '../support/counting-store.ts';
import { generateRuns } from './store.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 200_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 4);
const CACHE_ENTRIES = Number(process.env.BENCH_CACHE_ENTRIES ?? 50_000);
const DAY = 86_400_000;
/** Every generated row is older than the default 30-day window: generateRuns spreads runs over the 30 days before this. */
const GENERATED_AT = Date.now() - 40 * DAY;

/** The generated runs' trace events and replay bundles (generateRuns writes runs, attempts and rollups). */
async function addTracesAndReplays(store: Store): Promise<void> {
  const ids = await store.read((sql) => sql.all<{ id: string; created_at: number }>('SELECT id, created_at FROM runs'));
  const payload = JSON.stringify({ provider: 'chatcomp', model: 'gpt-4o-mini', note: 'generated' });
  for (let from = 0; from < ids.length; from += 10_000) {
    await store.write((sql) => {
      for (const { id, created_at: at } of ids.slice(from, from + 10_000)) {
        for (let seq = 1; seq <= EVENTS; seq++) {
          sql.run('INSERT INTO run_events (run_id, seq, type, payload_json, created_at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)', [
            id, seq, 'provider.attempt', payload, at + seq, `h${seq - 1}`, `h${seq}`,
          ]);
        }
        sql.run("INSERT INTO run_replays (run_id, tenant_id, request_json, identity_json, inputs_json, response_hash, created_at) VALUES (?, 'default', ?, '{}', '{}', 'h', ?)", [
          id, payload, at,
        ]);
      }
    });
  }
}

async function addCacheEntries(store: Store): Promise<void> {
  const answer = JSON.stringify({ id: 'chatcmpl-x', choices: [{ message: { role: 'assistant', content: 'lorem ipsum '.repeat(40) } }] });
  for (let from = 0; from < CACHE_ENTRIES; from += 10_000) {
    await store.write((sql) => {
      for (let i = from; i < Math.min(CACHE_ENTRIES, from + 10_000); i++) {
        sql.run(
          "INSERT INTO cache_entries (tenant_id, cache_type, key, app_id, value_json, hits, created_at) VALUES ('default', 'exact_response', ?, ?, ?, 0, ?)",
          [`key-${i}`, `app-${i % 8}`, answer, GENERATED_AT - Math.floor((i / CACHE_ENTRIES) * 30 * DAY)],
        );
      }
    });
  }
}

interface TimedWrite {
  /** What the write deleted from: the first table a DELETE named. */
  table: string;
  /** The write's statements. */
  cpuMs: number;
  wallMs: number;
  /** The turn of the event loop it ran in, to the next immediate: its COMMIT and any checkpoint included. */
  turnCpuMs: number;
  turnWallMs: number;
}

/** The store, each write's function timed (its statements; the COMMIT and any checkpoint after it show as pauses). */
function timedWrites(store: Store, writes: TimedWrite[]): Store {
  return overriding(store, {
    write: (inner) => (fn) =>
      inner.write((sql) => {
        let table = 'other';
        const watched: Sql = {
          secureDelete: (on) => sql.secureDelete(on),
          run: (text: string, params?: SqlParams) => {
            if (table === 'other') table = /^\s*DELETE FROM (\w+)/.exec(text)?.[1] ?? 'other';
            return sql.run(text, params);
          },
          get: (text, params) => sql.get(text, params),
          all: (text, params) => {
            if (table === 'other') table = /^\s*DELETE FROM (\w+)/.exec(text)?.[1] ?? 'other';
            return sql.all(text, params);
          },
        };
        const wall = performance.now();
        const cpu = process.cpuUsage();
        try {
          return fn(watched);
        } finally {
          const spent = process.cpuUsage(cpu);
          const write: TimedWrite = { table, cpuMs: (spent.user + spent.system) / 1000, wallMs: performance.now() - wall, turnCpuMs: 0, turnWallMs: 0 };
          writes.push(write);
          // The rest of the turn: the COMMIT, the log's flush and a checkpoint when one is due run before the immediate.
          setImmediate(() => {
            const turn = process.cpuUsage(cpu);
            write.turnCpuMs = (turn.user + turn.system) / 1000;
            write.turnWallMs = performance.now() - wall;
          });
        }
      }),
  });
}

function summary(times: number[]): string {
  if (times.length === 0) return 'none';
  const sorted = [...times].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(1);
  return `${times.length} writes, p50 ${at(50)} / p99 ${at(99)} / max ${sorted.at(-1)!.toFixed(1)} ms`;
}

const load = () => loadavg().map((n) => n.toFixed(1)).join(' ');
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-retention-'));
try {
  let store = openStore({ dataDir });
  const generated = performance.now();
  await generateRuns(store, RUNS, GENERATED_AT);
  await addTracesAndReplays(store);
  await addCacheEntries(store);
  // The generated runs left running (one in a hundred) are finished as `svc serve` finishes them at start: old runs
  // still running are what a crash leaves. Here, so that the pass below starts in a cold process, as after a restart.
  const generating = await createServices(loadConfig({ SVC_LOG_LEVEL: 'silent' }, { dataDir }), store);
  await generating.interruptedRuns.finish(await generating.interruptedRuns.find());
  await store.close();
  console.log(`${RUNS.toLocaleString('en-US')} runs (${EVENTS} events each) and ${CACHE_ENTRIES.toLocaleString('en-US')} cache entries generated in ${((performance.now() - generated) / 1000).toFixed(1)} s`);

  const writes: TimedWrite[] = [];
  store = timedWrites(openStore({ dataDir }), writes);
  const config = loadConfig({ SVC_LOG_LEVEL: 'silent' }, { dataDir });
  const services = await createServices(config, store);
  console.log(`load average before the pass: ${load()}; a retention write's time budget ${PRUNE_WRITE_MS} ms`);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const report = await services.retention.runOnce();
  const cpu = process.cpuUsage(cpuBefore);
  const took = performance.now() - started;
  delay.disable();
  console.log(`pass: ${report.runsDeleted.toLocaleString('en-US')} runs and ${report.cacheEntriesDeleted.toLocaleString('en-US')} cache entries deleted in ${(took / 1000).toFixed(2)} s (CPU ${(((cpu.user + cpu.system) / 1000) / 1000).toFixed(2)} s)`);
  for (const table of ['runs', 'cache_entries']) {
    const mine = writes.filter((write) => write.table === table || (table === 'runs' && write.table.startsWith('run_')));
    const first = (key: 'cpuMs' | 'turnCpuMs') => mine.slice(0, 5).map((write) => write[key].toFixed(1)).join(' / ');
    console.log(`  ${table}: statements' CPU ${summary(mine.map((write) => write.cpuMs))}; the first five ${first('cpuMs')} ms`);
    console.log(`  ${table}: the turn's CPU (with COMMIT and checkpoint) ${summary(mine.map((write) => write.turnCpuMs))}; the first five ${first('turnCpuMs')} ms`);
    console.log(`  ${table}: the turn's wall time ${summary(mine.map((write) => write.turnWallMs))}`);
  }
  console.log(`  longest event-loop pause ${(delay.max / 1e6).toFixed(1)} ms (p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms)`);
  console.log(`load average after the pass: ${load()}`);
  await store.close();
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
