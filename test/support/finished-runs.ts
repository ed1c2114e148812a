/**
 * A gateway run is finalised after its answer went out (a stream's run when the stream ends or its client leaves), so
 * a test reads it once it is no longer `running`. The wait is a deadline, grown with the load (loadScaled), not a count
 * of polls: 200 polls of 10 ms were 2 s on a quiet machine and too few on a loaded one. Past the deadline the last
 * read is returned, for the test's own assertions to say what was wrong.
 */
import type { FastifyInstance } from 'fastify';
import { json } from './build.ts';
import { sleep } from './fake-upstream.ts';
import { loadScaled } from './load-scaled.ts';

const POLL_MS = 10;

/** The run's detail (GET /api/v1/runs/:id: `{ run, events, attempts, ... }`) once the run is no longer running. */
export async function finishedRun(app: FastifyInstance, runId: string | null): Promise<any> {
  return until(async () => json(await app.inject({ url: `/api/v1/runs/${runId}` })), (detail) => detail.run?.status !== 'running');
}

/** The run list (GET /api/v1/runs?query) once it has a run and its latest is no longer running. */
export async function finishedRuns(app: FastifyInstance, query = ''): Promise<any[]> {
  return until(async () => json(await app.inject({ url: `/api/v1/runs${query}` })).runs, (runs) => runs.length > 0 && runs[0].status !== 'running');
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + loadScaled(10_000);
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(POLL_MS);
  }
}
