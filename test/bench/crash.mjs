/**
 * The ledger's window, seen from outside: how long after a gateway request is answered can a crash still lose its
 * run? (issue 7's durability rule; docs/performance-notes.md, "The ledger's window at a crash").
 *
 * Each trial starts svc on a fresh data directory, sends buffered live requests at a fixed concurrency, and kills svc
 * with SIGKILL in the middle of the load, noting when (this process's monotonic clock; every answer's arrival is
 * timed on the same clock). svc is then started again on the same directory and every answered run is looked up by
 * the id its answer carried (`x-svc-run-id`, `GET /api/v1/runs/:id`): kept if it is there and completed, lost if it is
 * not there or only its start was committed. A lost run's age is the time between its answer reaching the client and
 * the kill; the oldest lost age of a trial is how far back the crash reached.
 *
 * SIGKILL ends the process, not the machine: what svc had written to its log file (the kernel's page cache) survives,
 * so this measures the time until a run's commit is written, not until the log's flush to the disk, which follows it
 * (a power loss can also take a commit whose flush has not finished). Answers reach the client a little after svc
 * wrote them (up to the client's own queueing at concurrency 16), so ages are slight underestimates.
 *
 * Each killed svc also runs with SVC_TRACE_COMMITS and notes every window it commits (from its first write queued while
 * answers went out first to its COMMIT): the section counts those past 20 ms, all of them rather than the few a kill
 * happens to fall in, and those whose answers all waited for their commit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { table } from './gateway.mjs';
import { CLIENT_HEADERS, authorizeClients, chatBody, median, round, sleep, startSvc, stopSvc, tracedWindows } from './lib.mjs';

/**
 * Concurrencies, trials per concurrency and how long the load runs before the kill (a random part added). A process's
 * answers wait for their run's commit for its first 5 s of traffic (src/store/store.ts, ANSWERS_WAIT_FRESH_MS): the
 * kill comes after those, where answers go out before their commit, the window this section measures; the windows
 * of the first seconds are traced all the same. (1.5 s until 2026-11-26, when no answer waited.)
 */
export function crashPlan(quick) {
  return { concurrencies: [1, 16, 64], trials: quick ? 2 : 4, loadMs: quick ? 5_500 : 6_000 };
}

export async function crashSection(ctx) {
  const p = crashPlan(ctx.quick);
  const result = { method: 'SIGKILL under buffered live load, then every answered run looked up after a restart', plan: p };
  for (const concurrency of p.concurrencies) {
    const trials = [];
    for (let i = 0; i < p.trials; i++) {
      try {
        trials.push(await crashTrial(ctx, concurrency, p.loadMs + Math.random() * 300));
      } catch (error) {
        ctx.fail(`crash trial ${i + 1} at c=${concurrency}: ${error.message}`);
      }
    }
    if (trials.length === 0) continue; // each failed trial was reported
    const oldest = trials.map((t) => t.oldestLostMs ?? 0);
    result[`c${concurrency}`] = {
      trials: trials.length,
      answered: trials.map((t) => t.answered),
      lost: trials.map((t) => t.lost),
      oldestLostMs: { median: round(median(oldest), 1), max: round(Math.max(...oldest), 1), all: oldest.map((ms) => round(ms, 1)) },
      lostOlderThan20Ms: trials.reduce((sum, t) => sum + t.lostOlderThan20Ms, 0),
      // svc's own note of every window it committed before the kill (SVC_TRACE_COMMITS): all of them, not a sample.
      windowsTraced: trials.reduce((sum, t) => sum + t.windows.count, 0),
      // Windows none of whose answers went out before the commit (svc holds answers while fresh or after late windows).
      windowsAnswersWaited: trials.reduce((sum, t) => sum + t.windows.answersWaited, 0),
      windowsPast20Ms: trials.reduce((sum, t) => sum + t.windows.past20Ms, 0),
      windowsHeldByCheckpoint: trials.reduce((sum, t) => sum + t.windows.held, 0),
      windowsPast20MsHeldByCheckpoint: trials.reduce((sum, t) => sum + t.windows.heldPast20Ms, 0),
      longestWindowMs: round(Math.max(0, ...trials.map((t) => t.windows.longestMs)), 1),
    };
  }
  return result;
}

async function crashTrial(ctx, concurrency, loadMs) {
  const dir = mkdtempSync(join(os.tmpdir(), 'svc-bench-crash-'));
  let svc = null;
  try {
    const trace = join(dir, 'commits.trace');
    svc = await startSvc({ mockUrl: ctx.mock.url, dataDir: dir, env: { SVC_TRACE_COMMITS: trace } });
    await authorizeClients(svc.url);
    const answered = await loadUntilKilled(svc, concurrency, loadMs);
    const exit = await svc.exited;
    if (exit.signal !== 'SIGKILL') throw new Error(`svc ended with ${exit.code ?? exit.signal}, not by the SIGKILL`);
    // The API key was an awaited write (committed before its 201): it survives, and CLIENT_HEADERS still holds it.
    svc = await startSvc({ mockUrl: ctx.mock.url, dataDir: dir });
    const kept = await lookUp(svc.url, answered.runs.map((r) => r.runId));
    const lostAges = answered.runs.filter((r, i) => !kept[i]).map((r) => answered.killedAt - r.at);
    return {
      answered: answered.runs.length,
      lost: lostAges.length,
      oldestLostMs: lostAges.length ? Math.max(...lostAges) : null,
      lostOlderThan20Ms: lostAges.filter((ms) => ms > 20).length,
      windows: tracedWindows(trace),
    };
  } finally {
    if (svc) await stopSvc(svc);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `concurrency` clients in closed loops; after `loadMs`, SIGKILL. Resolves every answered run with its arrival. */
async function loadUntilKilled(svc, concurrency, loadMs) {
  const pool = new Pool(svc.url, { connections: concurrency, pipelining: 1 });
  const runs = [];
  let killedAt = null;
  const client = async () => {
    while (killedAt === null) {
      try {
        const res = await pool.request({ path: '/v1/chat/completions', method: 'POST', headers: CLIENT_HEADERS, body: chatBody() });
        await res.body.dump();
        const at = performance.now();
        // An answer that arrived after the kill was written before it, but its age would read as negative: left out.
        if (res.statusCode === 200 && killedAt === null) runs.push({ runId: res.headers['x-svc-run-id'], at });
        else if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      } catch (error) {
        if (killedAt === null) throw error;
      }
    }
  };
  const clients = Promise.all(Array.from({ length: concurrency }, client));
  clients.catch(() => {}); // awaited below, after the kill
  await sleep(loadMs);
  killedAt = performance.now();
  process.kill(svc.pid, 'SIGKILL');
  await clients;
  await pool.destroy().catch(() => {});
  return { runs, killedAt };
}

/**
 * Whether each run is in the restarted svc's ledger as completed. A run whose start was committed but whose outcome
 * was not counts as lost: its answer's writes are what the rule is about (the restart finishes it as failed,
 * `interrupted`).
 */
async function lookUp(baseUrl, runIds) {
  const pool = new Pool(baseUrl, { connections: 8 });
  const kept = new Array(runIds.length);
  let next = 0;
  const worker = async () => {
    while (next < runIds.length) {
      const i = next++;
      const res = await pool.request({ path: `/api/v1/runs/${encodeURIComponent(runIds[i])}`, method: 'GET', headers: { authorization: CLIENT_HEADERS.authorization } });
      if (res.statusCode !== 200 && res.statusCode !== 404) throw new Error(`GET /api/v1/runs/:id answered ${res.statusCode}`);
      kept[i] = res.statusCode === 200 && (await res.body.json()).run.status === 'completed';
      if (res.statusCode !== 200) await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  await pool.close();
  return kept;
}

export function printCrash(r) {
  console.log(`\nLedger window at a crash: SIGKILL under buffered live load, answered runs looked up after a restart (${r.plan.trials} trials per concurrency)`);
  table(
    ['conc', 'answered per trial', 'lost per trial', 'oldest lost answer ms (each trial)', 'median', 'max', 'lost > 20 ms old', 'windows traced', 'answers waited', 'past 20 ms (held)', 'longest ms'],
    r.plan.concurrencies
      .map((c) => [c, r[`c${c}`]])
      .filter(([, f]) => f)
      .map(([c, f]) => [c, f.answered.join(' '), f.lost.join(' '), f.oldestLostMs.all.join(' '), f.oldestLostMs.median, f.oldestLostMs.max, f.lostOlderThan20Ms, f.windowsTraced, f.windowsAnswersWaited ?? '-', `${f.windowsPast20Ms} (${f.windowsPast20MsHeldByCheckpoint})`, f.longestWindowMs]),
  );
}

/** The oldest lost answer over every trial of every concurrency (the figure the durability rule bounds). */
export function oldestLostOverall(r) {
  if (!r) return undefined;
  const maxima = r.plan.concurrencies.map((c) => r[`c${c}`]?.oldestLostMs.max).filter((ms) => typeof ms === 'number');
  return maxima.length ? Math.max(...maxima) : undefined;
}
