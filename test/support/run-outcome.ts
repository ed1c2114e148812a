/** A run's start and a completed run's outcome, for tests that start and finish runs through the ledger by hand. */
import type { RunOutcome, RunStart } from '../../src/evidence/ledger.ts';

/** A buffered chat run of the default tenant, no app, key or identity headers; `overrides` set the fields a test needs. */
export function runStart(overrides: Partial<RunStart> = {}): RunStart {
  return {
    tenantId: 'default',
    appId: null,
    agent: null,
    subject: null,
    keyId: null,
    mode: 'optimize',
    wire: 'chat_completions',
    model: 'gpt-4o-mini',
    stream: false,
    requestId: null,
    ...overrides,
  };
}

export function completedOutcome(model = 'gpt-4o-mini'): RunOutcome {
  return {
    status: 'completed',
    route: 'live',
    provider: 'mock',
    routeExplanation: {
      route: 'live',
      reason: 'test',
      rejectedAlternatives: [],
      policyVerdict: { decision: 'allow', policy: null, reason: null },
      cache: [],
      artifact: null,
      estimatedSavings: { usd: 0, ms: 0, ghost: false },
      fallback: null,
      provider: 'mock',
      model,
      executionMethod: { id: 'mock_model', referenceGrade: 'not_applicable' },
    },
    usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
    costUsd: 0,
    priced: true,
  };
}
