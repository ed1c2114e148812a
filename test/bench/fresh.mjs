#!/usr/bin/env node
/**
 * Two svc builds compared in their first seconds: the A/B for what a fresh process does, where ab.mjs compares warmed
 * ones. The bench's crash trials count the ledger's windows past 20 ms, and those all come from processes in their
 * first seconds, while V8 still compiles svc's code (docs/performance-notes.md, "The late windows of a fresh process,
 * by cause"); this runs the same kind of processes, alternating between the builds, so that a change meant for them can
 * be read against the machine's drift.
 *
 *   node test/bench/fresh.mjs --a <other checkout>/bin/svc [--b bin/svc] [--rounds 6] [--seconds 1.6]
 *       [--concurrency 1,16,64] [--a-env '{"NAME":"value"}'] [--b-env '{...}'] [--json-out fresh.json]
 *
 * Each round starts, for each build (the order flipped every round) and each concurrency, one svc on an empty data
 * directory, pinned as `npm run bench` pins it and run with SVC_TRACE_COMMITS, creates an API key, sends buffered live
 * requests (a new prompt each) from that many closed-loop clients for `--seconds`, and stops it. Per build and
 * concurrency it prints: processes, the median time to the listening line, the requests answered in all, svc's CPU
 * per request during the load, the windows svc committed, how many ended more than 20 ms after they opened and where
 * in the process's sequence of windows they came, the longest, and the median of the processes' p99 latencies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PINNED, cannon, chatBody, cliOption, comparedBuilds, cpuMs, createClientKey, median, round, runPinnedToLoadCpu, startMock, startSvc, stopSvc, summarize, tracedWindows } from './lib.mjs';

const argv = process.argv.slice(2);

runPinnedToLoadCpu(import.meta.url, 'fresh', main);

/** One fresh svc of `bin`: started, loaded at `concurrency` for `seconds`, stopped; what it did. */
async function freshProcess({ bin, env, mockUrl, concurrency, seconds }) {
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-fresh-'));
  const trace = join(dataDir, 'commits.trace');
  let svc = null;
  try {
    svc = await startSvc({ bin, mockUrl, dataDir, env: { ...env, SVC_TRACE_COMMITS: trace } });
    const { listeningMs } = svc;
    const authorization = await createClientKey(svc.url);
    const before = cpuMs(svc.pid);
    const load = await cannon(svc.url, { connections: concurrency, duration: seconds, next: () => ({ body: chatBody(), headers: { authorization } }) });
    const cpu = cpuMs(svc.pid) - before;
    if (load.non2xx || load.errors || load.timeouts) throw new Error(`${load.non2xx} non-2xx, ${load.errors + load.timeouts} errors`);
    await stopSvc(svc);
    svc = null;
    // Read after the stop: the trace holds every window the process committed, its last ones included.
    return { listeningMs, requests: load.latencies.length, p99: summarize(load.latencies).p99, cpuMs: cpu, windows: tracedWindows(trace) };
  } finally {
    if (svc) await stopSvc(svc);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const { bins, envs } = comparedBuilds(argv);
  const rounds = Number(cliOption(argv, '--rounds', 6));
  const seconds = Number(cliOption(argv, '--seconds', 1.6));
  const concurrencies = cliOption(argv, '--concurrency', '1,16,64').split(',').map(Number);
  const jsonOut = cliOption(argv, '--json-out');

  console.log(`A ${bins.A} ${JSON.stringify(envs.A)}\nB ${bins.B} ${JSON.stringify(envs.B)}`);
  console.log(
    `${rounds} rounds; each: a fresh svc per build and concurrency (${concurrencies.join(', ')}), ${seconds} s of load; ` +
      `${PINNED ? 'svc on CPU 0, load + mock on CPU 1' : 'unpinned'}`,
  );
  const mock = await startMock();
  const processes = { A: {}, B: {} };
  try {
    for (let i = 0; i < rounds; i++) {
      for (const name of i % 2 === 0 ? ['A', 'B'] : ['B', 'A']) {
        for (const concurrency of concurrencies) {
          const p = await freshProcess({ bin: bins[name], env: envs[name], mockUrl: mock.url, concurrency, seconds });
          (processes[name][concurrency] ??= []).push(p);
          const late = p.windows.past20MsAt.length ? ` at ${p.windows.past20MsAt.join(', ')}` : '';
          console.log(
            `round ${i} ${name} c=${concurrency}: listening ${round(p.listeningMs, 0)} ms, ${p.requests} requests, ` +
              `${round(p.cpuMs / p.requests, 3)} ms CPU each, p99 ${p.p99} ms; windows ${p.windows.count} (answers waited in ${p.windows.answersWaited}), ` +
              `${p.windows.past20Ms} past 20 ms${late}, longest ${round(p.windows.longestMs, 1)} ms`,
          );
        }
      }
    }
  } finally {
    await mock.close();
  }

  const result = { rounds, seconds, concurrencies, A: { bin: bins.A, env: envs.A }, B: { bin: bins.B, env: envs.B } };
  for (const concurrency of concurrencies) {
    for (const name of ['A', 'B']) {
      const all = processes[name][concurrency];
      const requests = all.reduce((sum, p) => sum + p.requests, 0);
      const f = {
        processes: all.length,
        listeningMsMedian: round(median(all.map((p) => p.listeningMs)), 0),
        requests,
        svcCpuMsPerRequest: round(all.reduce((sum, p) => sum + p.cpuMs, 0) / requests, 3),
        windows: all.reduce((sum, p) => sum + p.windows.count, 0),
        windowsPast20Ms: all.reduce((sum, p) => sum + p.windows.past20Ms, 0),
        windowsAnswersWaited: all.reduce((sum, p) => sum + p.windows.answersWaited, 0),
        past20MsAt: all.flatMap((p) => p.windows.past20MsAt),
        longestWindowMs: round(Math.max(...all.map((p) => p.windows.longestMs)), 1),
        p99MsMedian: round(median(all.map((p) => p.p99)), 2),
      };
      result[name][`c${concurrency}`] = f;
      console.log(
        `${name} c=${concurrency}: ${f.processes} processes, listening ${f.listeningMsMedian} ms (median), ${f.requests} requests, ` +
          `${f.svcCpuMsPerRequest} ms CPU each; windows ${f.windows} (answers waited in ${f.windowsAnswersWaited}), ${f.windowsPast20Ms} past 20 ms, longest ${f.longestWindowMs} ms; ` +
          `p99 ${f.p99MsMedian} ms (median of the processes')`,
      );
    }
  }
  if (jsonOut) writeFileSync(jsonOut, `${JSON.stringify(result, null, 2)}\n`);
}
