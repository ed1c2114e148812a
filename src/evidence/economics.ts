/**
 * A run's execution ledger (SPEC 4.9 `/runs/:id/economics`), from the run and its provider attempts.
 *
 * - served attempts: the calls made to answer the request (failed ones included: their cost is real);
 *   shadow and evaluator attempts: calls made beside it by the optimizer (none until learning lands).
 * - actual tokens: what providers processed for this run; customer tokens: what the answer reports to the caller
 *   (equal on a live run; on a cache hit the caller sees the original usage while no provider ran).
 * - provider cost: served attempts; optimizer cost: shadow + evaluator attempts.
 * - reference cost: what the answer would have cost live, stated explicitly with its source: the served attempts
 *   on a live run; on a cache hit what the stored answer cost (the run's savedUsd): the attempt that produced it in
 *   its source run, not a billed failed attempt before it, which the hit does not avoid (a live call need not fail).
 *   Observe mode's would-have-saved cost is savings.ghostUsd, not a reference.
 * - savings = reference - provider - optimizer (never below zero for a live run); margin = savings / reference.
 */
import { readableOrNull } from './stored-payload.ts';
import type { AttemptRecord, RunRecord } from './types.ts';

type AttemptRole = 'served' | 'shadow' | 'evaluator';

const round = (usd: number) => Math.round(usd * 1e9) / 1e9;

export function runEconomics(run: RunRecord, attempts: readonly AttemptRecord[]) {
  const byRole: Record<AttemptRole, AttemptRecord[]> = { served: [...attempts], shadow: [], evaluator: [] };
  const sum = (list: AttemptRecord[], pick: (attempt: AttemptRecord) => number) => list.reduce((total, attempt) => total + pick(attempt), 0);
  const actualPrompt = sum(attempts as AttemptRecord[], (a) => a.promptTokens);
  const actualCompletion = sum(attempts as AttemptRecord[], (a) => a.completionTokens);
  const providerCostUsd = round(sum(byRole.served, (a) => a.costUsd));
  const optimizerCostUsd = round(sum(byRole.shadow, (a) => a.costUsd) + sum(byRole.evaluator, (a) => a.costUsd));

  let reference: { costUsd: number; source: string };
  if (run.route === 'exact_cache' || run.route === 'artifact') {
    const explanation = readableOrNull(run.routeExplanation);
    const sourceRunId = explanation?.cache.find((decision) => decision.sourceRunId)?.sourceRunId ?? null;
    reference = { costUsd: round(run.savedUsd), source: sourceRunId ? `source run ${sourceRunId}` : 'cached answer' };
  } else if (run.status === 'completed') {
    reference = { costUsd: providerCostUsd, source: 'served attempts' };
  } else {
    reference = { costUsd: 0, source: run.status === 'running' ? 'run in progress' : `run ${run.status}: no answer to price` };
  }
  const savingsUsd = run.status === 'completed' ? round(Math.max(0, reference.costUsd - providerCostUsd - optimizerCostUsd)) : 0;
  const view = (attempt: AttemptRecord) => ({
    seq: attempt.seq,
    provider: attempt.provider,
    model: attempt.model,
    outcome: attempt.outcome,
    errorKind: attempt.errorKind,
    promptTokens: attempt.promptTokens,
    completionTokens: attempt.completionTokens,
    costUsd: attempt.costUsd,
    latencyMs: attempt.latencyMs,
  });
  return {
    runId: run.id,
    status: run.status,
    route: run.route,
    currency: 'USD',
    priced: run.priced,
    attempts: { served: byRole.served.map(view), shadow: byRole.shadow.map(view), evaluator: byRole.evaluator.map(view) },
    tokens: {
      actual: { promptTokens: actualPrompt, completionTokens: actualCompletion, totalTokens: actualPrompt + actualCompletion },
      customer: run.usage,
    },
    cost: { providerUsd: providerCostUsd, optimizerUsd: optimizerCostUsd, totalUsd: round(providerCostUsd + optimizerCostUsd) },
    reference,
    savings: { usd: savingsUsd, ms: run.savedMs, ghostUsd: run.status === 'completed' ? run.ghostSavedUsd : 0 },
    margin: { usd: savingsUsd, ratio: reference.costUsd > 0 ? round(savingsUsd / reference.costUsd) : null },
  };
}
