/** The run ledger's records (SPEC 2.3, 4.9, 6.1). */

export type RunStatus = 'running' | 'completed' | 'failed' | 'blocked';
export type RunRoute = 'live' | 'exact_cache' | 'artifact' | 'blocked';
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'completed', 'failed', 'blocked'];
export const RUN_ROUTES: readonly RunRoute[] = ['live', 'exact_cache', 'artifact', 'blocked'];

/**
 * The reason code of a run recorded by `POST /api/v1/ingest/prompt`: a prompt handled outside svc. Such a run is
 * recorded completed on the `live` route, and only this reason tells it from live traffic svc served (/savings).
 */
export const INGESTED_REASON = 'ingested';

/**
 * The longest model name (characters, trimmed) a gateway request may give, so the longest a gateway run is recorded
 * under: every wire validates its `model` to it (src/evidence/model-field.ts), and the runs list's `model`
 * filter takes up to it, so each such run can be found by its model.
 */
export const RUN_MODEL_MAX_LENGTH = 256;

/** How one cache tier was treated for a request (each skipped or suppressed route is evidence, SPEC 4.2). */
export interface CacheDecision {
  cacheType: string;
  /** lookup outcome: hit/miss, or why it was not consulted. */
  lookup: 'hit' | 'miss' | 'bypassed' | 'skipped_no_store' | 'observe_only' | 'not_applicable';
  /** write outcome after a live answer. */
  write?: 'stored' | 'refreshed' | 'suppressed_no_store' | 'not_cacheable';
  /** the header that caused a bypass/suppression. */
  control?: string;
  /** why a live answer was not stored, when `write` alone does not say it (an answer too large to store). */
  reason?: string;
  key?: string;
  sourceRunId?: string;
}

/** Stored JSON of svc's own that is not JSON (the data file edited or damaged), answered as the text stored. */
export interface StoredText {
  storedText: string;
}

/** A finished run's failure. `upstreamCode`: the error code the upstream gave a failure it said in a 200 answer (an error event, a failed response). */
export interface RunError {
  kind: string;
  message: string;
  upstreamStatus?: number;
  upstreamCode?: string;
}

/** Why the response came from where it came from (SPEC 2.3 routeExplanation). */
export interface RouteExplanation {
  route: RunRoute;
  reason: string;
  rejectedAlternatives: Array<{ route: string; reason: string }>;
  policyVerdict: { decision: 'allow' | 'block'; policy: string | null; reason: string | null };
  cache: CacheDecision[];
  artifact: null | { id: string; reason: string };
  estimatedSavings: { usd: number; ms: number; ghost: boolean };
  fallback: null | { from: string; to: string; reason: string };
  provider: string | null;
  model: string;
  executionMethod: { id: string; referenceGrade: 'unverified' | 'verified' | 'not_applicable' };
}

export interface RunUsage {
  /** Every input token the upstream processed: those read from or written to its prompt cache included. */
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /**
   * Of `promptTokens`, those read from the provider's prompt cache and those written to it (of which kept an hour),
   * each priced at its own rate (src/gateway/pricing.ts); absent when none. Set from the messages wire's usage. The
   * run.<status> event keeps them; the run's row keeps only the counts above.
   */
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  cacheWrite1hTokens?: number;
}

export interface RunRecord {
  id: string;
  tenantId: string;
  appId: string | null;
  agent: string | null;
  subject: string | null;
  keyId: string | null;
  mode: 'observe' | 'optimize';
  wire: string;
  model: string;
  provider: string | null;
  status: RunStatus;
  route: RunRoute | null;
  stream: boolean;
  requestId: string | null;
  /** `{storedText}` when the stored explanation is not JSON (the data file edited): stored-payload.ts, storedJson. */
  routeExplanation: RouteExplanation | StoredText | null;
  usage: RunUsage;
  costUsd: number;
  savedUsd: number;
  ghostSavedUsd: number;
  savedMs: number;
  /**
   * False when the model has no entry in the price table, or an attempt's cost is unknown (an answer the upstream gave
   * but svc could not read): its cost is not guessed (docs/gateway.md, "Cost").
   */
  priced: boolean;
  latencyMs: number | null;
  /** `{storedText}` when the stored error is not JSON (the data file edited). */
  error: null | RunError | StoredText;
  createdAt: number;
  completedAt: number | null;
  eventCount: number;
  lastHash: string;
  /** Request-template fingerprint (wire, model, system text, tool names): the attribution workload key. */
  fingerprint: string | null;
  /** The execution method that produced the answer (routeExplanation.executionMethod.id) once finished. */
  executionMethod: string | null;
  /** Short reason code of the route decision (docs/evidence.md), for attribution. */
  reasonCode: string | null;
  /** `from->to` when a provider fallback served the run. */
  fallback: string | null;
}

/**
 * A run as it finishes, for the rollups: with the tokens providers processed for it (SPEC 4.9 *actual* tokens), what
 * its attempts add up to: 0 for a cache hit, the failed attempts' billed tokens too after a fallback. `usage` is what
 * the answer reports to the caller (*customer* tokens). Not a runs column (economics sums the attempts): the ledger
 * keeps the sums as it records the attempts, so the rollups take them without reading the attempts back.
 */
export interface FinishedRun extends RunRecord {
  actualPromptTokens: number;
  actualCompletionTokens: number;
}

export interface TraceEvent {
  runId: string;
  seq: number;
  type: string;
  payload: Record<string, unknown>;
  createdAt: number;
  prevHash: string;
  hash: string;
}

export interface AttemptRecord {
  runId: string;
  seq: number;
  provider: string;
  model: string;
  outcome: 'success' | 'failed' | 'aborted';
  errorKind: string | null;
  upstreamStatus: number | null;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  latencyMs: number;
  createdAt: number;
}

export interface RunFilter {
  tenantId: string;
  /** Set for app-pinned identities: they see only their app's runs. */
  appId?: string | null;
  route?: string;
  status?: string;
  provider?: string;
  model?: string;
  since?: number;
  /** true: only SDK-ingested prompts (reason code INGESTED_REASON); false: every run but them. */
  ingested?: boolean;
}
