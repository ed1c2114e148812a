/**
 * Event-loop stall of the cache stats (`GET /api/v1/cache/stats`, docs/performance-notes.md): a data file holding
 * BENCH_CACHE_ENTRIES (default 100,000) exact-cache entries of the tenant counted, each an answer of
 * BENCH_CACHE_ANSWER_KB (default 1.5) KB, and a
 * quarter as many of another tenant's; the stats of the tenant-wide caller and of an app-pinned one are read five
 * times each while a timer measures the longest gap between two turns of the event loop (what every /v1 request
 * waited at worst) and the longest read of the store (wall and CPU time). The entries are written with SQL, as a
 * data file of that size holds them; the counts the stats read (migration 17) are kept by the table's triggers.
 * Run with: node --import tsx test/bench/cache-stats.ts (BENCH_CACHE_ENTRIES=1000000 BENCH_CACHE_ANSWER_KB=0.1 for a
 * million entries without ~1.5 GB of answers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createCacheRepository } from '../../src/caches/repo.ts';
import { openStore } from '../../src/store/store.ts';
import { overriding } from '../support/counting-store.ts';

const ENTRIES = Number(process.env.BENCH_CACHE_ENTRIES ?? 100_000);
const ANSWER_KB = Number(process.env.BENCH_CACHE_ANSWER_KB ?? 1.5);
const dataDir = mkdtempSync(join(tmpdir(), 'svc-bench-cache-stats-'));
try {
  const store = openStore({ dataDir });
  const answer = JSON.stringify({ id: 'chatcmpl-x', choices: [{ message: { role: 'assistant', content: 'lorem ipsum '.repeat(Math.round((ANSWER_KB * 1024 - 80) / 12)) } }] });
  const FILL_BATCH = Math.max(1, Math.floor(10_000 / Math.max(1, ANSWER_KB / 16)));
  const fill = async (tenantId: string, round: number, count: number) => {
    for (let from = 0; from < count; from += FILL_BATCH) {
      await store.write((sql) => {
        for (let i = from; i < Math.min(count, from + FILL_BATCH); i++) {
          sql.run(
            "INSERT INTO cache_entries (tenant_id, cache_type, key, app_id, value_json, hits, created_at) VALUES (?, 'exact_response', ?, ?, ?, ?, ?)",
            [tenantId, `${tenantId}-${round}-${i}`, i % 4 === 0 ? 'app-pinned' : 'app-other', answer, i % 3, 1_000 + i],
          );
        }
      });
    }
  };
  // Interleaved, as tenants' traffic is.
  for (let round = 0; round < 4; round++) {
    await fill('ten_counted', round, ENTRIES / 4);
    await fill('ten_other', round, ENTRIES / 16);
  }
  // The longest synchronous read, as wall and as CPU time (the machine may be shared: the event-loop gap then
  // includes time the process was not running at all).
  let longestRead = { wallMs: 0, cpuMs: 0 };
  const timed = overriding(store, {
    read: (inner) => (fn) =>
      inner.read((sql) => {
        const wall = performance.now();
        const cpu = process.cpuUsage();
        try {
          return fn(sql);
        } finally {
          const spent = process.cpuUsage(cpu);
          longestRead = {
            wallMs: Math.max(longestRead.wallMs, performance.now() - wall),
            cpuMs: Math.max(longestRead.cpuMs, (spent.user + spent.system) / 1000),
          };
        }
      }),
  });
  const repo = createCacheRepository(timed);
  await repo.loaded();
  for (const [caller, appId] of [
    ['tenant-wide', null],
    ['app-pinned', 'app-pinned'],
  ] as const) {
    for (let round = 1; round <= 5; round++) {
      let longest = 0;
      longestRead = { wallMs: 0, cpuMs: 0 };
      let last = performance.now();
      let running = true;
      const ticker = (async () => {
        while (running) {
          await nextTurn();
          const now = performance.now();
          longest = Math.max(longest, now - last);
          last = now;
        }
      })();
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      const rows = await repo.stats('ten_counted', appId);
      const took = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      running = false;
      await ticker;
      const exact = rows.find((row) => row.cacheType === 'exact_response');
      console.log(`${caller} round ${round}: ${exact?.entries} entries, ${exact?.hits} hits; ${took.toFixed(1)} ms (CPU ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms), longest event-loop stall ${longest.toFixed(1)} ms, longest read ${longestRead.wallMs.toFixed(1)} ms (CPU ${longestRead.cpuMs.toFixed(1)} ms)`);
    }
  }
  await store.close();
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
