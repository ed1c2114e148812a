/**
 * Economics across runs (SPEC 4.7, 4.9): the savings rollup, month-to-date usage, and usage attribution by
 * dimension. All three read the run rollups (rollups.ts), never the ledger rows, so they answer in milliseconds on a
 * ledger of millions of runs. Windows are whole UTC days.
 *
 * Counting rules (SPEC 4.9): totalRuns counts every status; liveRuns and optimizedRuns count completed runs only;
 * liveRuns only those svc served: an SDK-ingested prompt (handled outside svc, recorded completed on the live route)
 * counts in ingestedRuns instead, and so stays out of the hit-rate denominators, as svc served it nothing;
 * failed and in-flight runs are never credited as optimized nor counted in hit-rate denominators; a finished run
 * with no known route counts in unknownRuns, one with no known status in unknownStatusRuns; totalCostUsd includes
 * the cost of failed provider attempts; savings are credited for completed runs only; ghostSavedUsd is what
 * observe-mode traffic would have saved. unpricedRuns counts the finished runs whose cost is not firm (`priced:
 * false`: no list price, or a cost svc could not know), summed as $0: costIsLowerBound says the totals hold some.
 * Tokens are of two kinds, as in a run's economics: promptTokens/completionTokens/totalTokens are the customer tokens
 * (what the answers report; a cache hit replays its source's usage), actual* the tokens providers processed (billed).
 */
import { toIso, type Clock } from '../core/clock.ts';
import type { AuthContext } from '../identity/auth-context.ts';
import { DAY_MS, dayOf, type RollupDimension, type RollupScope, type RollupsRepository, type RollupTotals } from './rollups.ts';
import { INGESTED_REASON, RUN_ROUTES, RUN_STATUSES } from './types.ts';

/** Attribution dimensions of SPEC 4.7; `workflow` and `pattern` have no source yet, so all runs are unattributed. */
export const ATTRIBUTION_DIMENSIONS = ['route', 'workflow', 'subject', 'fingerprint', 'app', 'pattern', 'model', 'agent', 'executionMethod', 'reason', 'fallback'] as const;
export type AttributionDimension = (typeof ATTRIBUTION_DIMENSIONS)[number];
const UNTRACKED: ReadonlySet<AttributionDimension> = new Set(['workflow', 'pattern']);

export interface DayWindow {
  /** Epoch ms; undefined = from the first run. */
  since?: number;
  /** Epoch ms; undefined = now. */
  until?: number;
}

export interface AttributionQuery extends DayWindow {
  pages: Partial<Record<AttributionDimension, { limit: number; offset: number }>>;
}

export const ATTRIBUTION_DEFAULT_LIMIT = 10;

const round = (usd: number) => Math.round(usd * 1e9) / 1e9;

function totalsView(totals: RollupTotals) {
  return {
    runs: totals.runs,
    costUsd: round(totals.costUsd),
    savedUsd: round(totals.savedUsd),
    ghostSavedUsd: round(totals.ghostSavedUsd),
    savedMs: totals.savedMs,
    // Customer tokens: what the answers report to the callers (a cache hit the usage of the answer it replays).
    promptTokens: totals.promptTokens,
    completionTokens: totals.completionTokens,
    totalTokens: totals.promptTokens + totals.completionTokens,
    // Actual tokens: what providers processed, so what they bill (a cache hit none; a failed attempt's billed ones).
    actualPromptTokens: totals.actualPromptTokens,
    actualCompletionTokens: totals.actualCompletionTokens,
    actualTotalTokens: totals.actualPromptTokens + totals.actualCompletionTokens,
    ...costFirmness(totals),
  };
}

/** How many of the summed runs have a cost that is not firm, and so whether the cost summed is only a lower bound. */
function costFirmness(totals: RollupTotals) {
  return { unpricedRuns: totals.unpricedRuns, costIsLowerBound: totals.unpricedRuns > 0 };
}

const ZERO: RollupTotals = {
  runs: 0, costUsd: 0, savedUsd: 0, ghostSavedUsd: 0, savedMs: 0, promptTokens: 0, completionTokens: 0, unpricedRuns: 0, actualPromptTokens: 0,
  actualCompletionTokens: 0,
};

function add(into: RollupTotals, more: RollupTotals): RollupTotals {
  return {
    runs: into.runs + more.runs,
    costUsd: into.costUsd + more.costUsd,
    savedUsd: into.savedUsd + more.savedUsd,
    ghostSavedUsd: into.ghostSavedUsd + more.ghostSavedUsd,
    savedMs: into.savedMs + more.savedMs,
    promptTokens: into.promptTokens + more.promptTokens,
    completionTokens: into.completionTokens + more.completionTokens,
    unpricedRuns: into.unpricedRuns + more.unpricedRuns,
    actualPromptTokens: into.actualPromptTokens + more.actualPromptTokens,
    actualCompletionTokens: into.actualCompletionTokens + more.actualCompletionTokens,
  };
}

/** The first instant of `now`'s UTC month: the day moved back, not Date.UTC, which reads the years 0-99 as 1900-1999. */
function monthStart(now: number): number {
  const day = dayOf(now);
  return (day - (new Date(now).getUTCDate() - 1)) * DAY_MS;
}

export interface SavingsService {
  savings(auth: AuthContext, window: DayWindow): Promise<Record<string, unknown>>;
  usage(auth: AuthContext): Promise<Record<string, unknown>>;
  attribution(auth: AuthContext, query: AttributionQuery): Promise<Record<string, unknown>>;
}

export function createSavingsService(deps: { repo: RollupsRepository; clock: Clock }): SavingsService {
  const { repo, clock } = deps;

  function scopeOf(auth: AuthContext, window: DayWindow): RollupScope {
    const now = clock.now();
    const scope: RollupScope = {
      tenantId: auth.tenantId,
      fromDay: window.since === undefined ? 0 : dayOf(window.since),
      // Until today by default, or until the day `since` names when that is later: never a window that ends before it
      // starts (`since` in the future is an empty window, not an inverted one).
      toDay: dayOf(window.until ?? Math.max(now, window.since ?? now)),
    };
    if (!auth.tenantWide) scope.appId = auth.appId;
    return scope;
  }

  // `since` is null only when none was given: day 0 is 1970-01-01, a day like any other (and the start of the default
  // attribution window of an until in January 1970).
  function windowView(scope: RollupScope, window: DayWindow) {
    return { since: window.since === undefined ? null : toIso(scope.fromDay * DAY_MS), until: toIso((scope.toDay + 1) * DAY_MS - 1), granularity: 'utc_day' };
  }

  return {
    async savings(auth, window) {
      await repo.settle();
      const scope = scopeOf(auth, window);
      const [rows, runningRuns, ingested] = await Promise.all([
        repo.byStatusRoute(scope),
        repo.runningCount(scope),
        // The reason rows keep no status or route, but an ingested run is only ever recorded completed on the live route
        // (a crash cannot leave one running: it is started and finished in one go), so all of them are in counts.live.
        repo.byValue(scope, 'reason', INGESTED_REASON),
      ]);
      const knownStatus = new Set<string>(RUN_STATUSES);
      const knownRoute = new Set<string>(RUN_ROUTES);
      let totals = ZERO;
      let completed = ZERO;
      const counts = { live: 0, exactCache: 0, artifact: 0, blocked: 0, failed: 0, unknownRoute: 0, unknownStatus: 0 };
      for (const row of rows) {
        totals = add(totals, row);
        if (!knownStatus.has(row.status)) counts.unknownStatus += row.runs;
        else if (row.status === 'blocked') counts.blocked += row.runs;
        else if (row.status === 'failed') counts.failed += row.runs;
        if (row.status !== 'completed') continue;
        completed = add(completed, row);
        if (!knownRoute.has(row.route)) counts.unknownRoute += row.runs;
        else if (row.route === 'live') counts.live += row.runs;
        else if (row.route === 'exact_cache') counts.exactCache += row.runs;
        else if (row.route === 'artifact') counts.artifact += row.runs;
      }
      const ingestedRuns = Math.min(ingested.runs, counts.live);
      const liveRuns = counts.live - ingestedRuns;
      const optimizedRuns = counts.exactCache + counts.artifact;
      const servedRuns = liveRuns + optimizedRuns;
      return {
        window: windowView(scope, window),
        currency: 'USD',
        totalRuns: totals.runs + runningRuns,
        liveRuns,
        ingestedRuns,
        optimizedRuns,
        exactCacheRuns: counts.exactCache,
        artifactRuns: counts.artifact,
        blockedRuns: counts.blocked,
        failedRuns: counts.failed,
        runningRuns,
        unknownRuns: counts.unknownRoute,
        unknownStatusRuns: counts.unknownStatus,
        totalCostUsd: round(totals.costUsd),
        ...costFirmness(totals),
        totalSavedUsd: round(completed.savedUsd),
        ghostSavedUsd: round(completed.ghostSavedUsd),
        totalSavedMs: completed.savedMs,
        cacheHitRate: servedRuns > 0 ? counts.exactCache / servedRuns : 0,
        artifactHitRate: servedRuns > 0 ? counts.artifact / servedRuns : 0,
        // The web-context tier (SPEC 4.18) is not built yet: nothing saved there so far.
        webContext: { snapshots: 0, tokensSavedEstimate: 0 },
        spendAvoidedUsd: round(completed.savedUsd),
      };
    },

    async usage(auth) {
      await repo.settle();
      const now = clock.now();
      const start = monthStart(now);
      const scope = scopeOf(auth, { since: start, until: now });
      const [days, runningRuns] = await Promise.all([repo.byDay(scope), repo.runningCount(scope)]);
      const byDay = new Map(days.map((row) => [row.day, row]));
      let month = ZERO;
      const trend = [];
      for (let day = scope.fromDay; day <= scope.toDay; day++) {
        const totals = byDay.get(day) ?? ZERO;
        month = add(month, totals);
        trend.push({ date: toIso(day * DAY_MS).slice(0, 10), ...totalsView(totals) });
      }
      return {
        period: { start: toIso(start), end: toIso(now) },
        usage: { ...totalsView(month), runningRuns },
        // Plans and numeric quotas land with the accounts issue; a self-hosted appliance is unlimited until then.
        quota: { plan: 'self_hosted', monthlyRunLimit: null, used: month.runs + runningRuns, remaining: null, exceeded: false },
        spend: { costUsd: round(month.costUsd), currency: 'USD', ...costFirmness(month) },
        savings: { savedUsd: round(month.savedUsd), ghostSavedUsd: round(month.ghostSavedUsd), savedMs: month.savedMs },
        trend,
      };
    },

    async attribution(auth, query) {
      await repo.settle();
      // Month to date by default: of the month `until` falls in when only it is given (not this month's start, after it).
      const until = query.until ?? Math.max(clock.now(), query.since ?? 0);
      const window: DayWindow = { since: query.since ?? monthStart(until), until };
      const scope = scopeOf(auth, window);
      const totals = await repo.total(scope);
      const result: Record<string, unknown> = { window: windowView(scope, window), currency: 'USD', totals: totalsView(totals) };
      for (const dim of ATTRIBUTION_DIMENSIONS) {
        const page = query.pages[dim] ?? { limit: ATTRIBUTION_DEFAULT_LIMIT, offset: 0 };
        const { entries, total } = UNTRACKED.has(dim)
          ? { entries: totals.runs > 0 && page.offset === 0 ? [{ value: '', ...totals }] : [], total: totals.runs > 0 ? 1 : 0 }
          : await repo.ranked(scope, dim as RollupDimension, page);
        const key = `${dim[0]!.toUpperCase()}${dim.slice(1)}`;
        result[`by${key}`] = entries.map((entry) => ({
          value: entry.value === '' ? null : entry.value,
          ...totalsView(entry),
          costShare: totals.costUsd > 0 ? round(entry.costUsd / totals.costUsd) : 0,
          runShare: totals.runs > 0 ? round(entry.runs / totals.runs) : 0,
        }));
        const hasMore = page.offset + entries.length < total;
        result[`by${key}Window`] = { limit: page.limit, offset: page.offset, total, hasMore, nextOffset: hasMore ? page.offset + page.limit : null };
      }
      return result;
    },
  };
}

