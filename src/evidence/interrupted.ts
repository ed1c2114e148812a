/**
 * Runs a stopped process left unfinished. A run is `running` in the ledger from its start until its outcome is
 * recorded; a process that ends without recording it (a crash, SIGKILL, a power loss: a graceful shutdown waits for
 * its requests) leaves it so for good, counted as in flight by every list and savings total. The data directory has
 * one owner, so at start-up, before any request, every run still running is such a run. They are finished as failed,
 * error kind `interrupted`, with a `run.failed` event on their chain: whether the request was answered is unknown.
 */
import type { Clock } from '../core/clock.ts';
import { linkedEvent } from './chain.ts';
import { failedReasonCode } from './ledger.ts';
import type { AttemptsSpent, RunsRepository } from './repo.ts';
import type { FinishedRun, RunRecord, TraceEvent } from './types.ts';

export const INTERRUPTED_ERROR = {
  kind: 'interrupted',
  message: 'svc stopped before this run finished (a crash or a kill); whether the request was answered is unknown',
} as const;

/** Runs finished per committed write: a data file left by a crash under load holds as many as were in flight. */
const RUNS_PER_WRITE = 200;

export interface InterruptedRuns {
  /** Ids of the runs left running by an earlier process. Call before serving: afterwards new runs run too. */
  find(): Promise<string[]>;
  /** Finish them (those still running), a batch per write. Resolves to how many were finished. */
  finish(ids: readonly string[]): Promise<number>;
}

export function createInterruptedRuns(deps: { repo: RunsRepository; clock: Clock }): InterruptedRuns {
  const { repo, clock } = deps;
  const close = (run: RunRecord, spent: AttemptsSpent): { event: TraceEvent; final: FinishedRun } => {
    const at = clock.now();
    const seq = run.eventCount + 1;
    // What its attempts committed before the stop spent (an upstream's answer whose run was not finished yet): a cost
    // that is real, so the run, its economics and the rollups count it (SPEC 4.9: failed attempts' costs count).
    const usage = { promptTokens: spent.promptTokens, completionTokens: spent.completionTokens, totalTokens: spent.promptTokens + spent.completionTokens };
    const costUsd = spent.costUsd;
    // The payload of the ledger's own closing event (ledger.ts `finish`): the outcome as far as it is known.
    const payload: Record<string, unknown> = { route: null, provider: run.provider, usage, costUsd, latencyMs: null, error: INTERRUPTED_ERROR };
    const event = linkedEvent(run.lastHash, run.id, seq, 'run.failed', payload, at);
    const final: FinishedRun = {
      ...run,
      status: 'failed',
      route: null,
      usage,
      costUsd,
      // A lower bound, not a firm figure: the upstream call in flight when svc stopped (a run is opened once its first
      // call is on the wire) may have been billed, and svc has no usage for it (docs/gateway.md, "Cost").
      priced: false,
      error: { ...INTERRUPTED_ERROR },
      completedAt: at,
      eventCount: seq,
      lastHash: event.hash,
      reasonCode: failedReasonCode(INTERRUPTED_ERROR.kind),
      // Its usage is what its attempts processed: customer and actual tokens are the same here.
      actualPromptTokens: spent.promptTokens,
      actualCompletionTokens: spent.completionTokens,
    };
    return { event, final };
  };
  return {
    find: () => repo.runningRunIds(),
    async finish(ids) {
      let finished = 0;
      for (let i = 0; i < ids.length; i += RUNS_PER_WRITE) finished += await repo.finishRunning(ids.slice(i, i + RUNS_PER_WRITE), close);
      return finished;
    },
  };
}
