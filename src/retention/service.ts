/**
 * Retention (DESIGN.md section 3, SPEC 2.4 `retention_days`): runs with their trace events and attempts, and cache
 * entries, older than each tenant's window are deleted in small batches off the hot path (a run still running is
 * not: it goes in a pass after it ended). Each batch is its own
 * short write; the pass yields to the event loop between batches, so gateway traffic never waits behind a long
 * delete. Indexes `runs (tenant_id, status, created_at)` (the finished statuses only) and
 * `cache_entries (tenant_id, created_at)` serve the scans.
 *
 * The same pass purges the bulk data of deleted organizations (docs/accounts.md: deletion hands runs, traces,
 * caches and rollups over to this purge, which resumes after a restart) and runs housekeeping tasks (expired
 * sessions and one-time tokens, old rate-limit attempts).
 */
import type { Clock } from '../core/clock.ts';

export const RETENTION_BATCH = 200;
const DAY_MS = 86_400_000;

export interface RetentionDeps {
  clock: Clock;
  tenantIds(): Promise<string[]>;
  retentionDays(tenantId: string): Promise<number>;
  pruneRuns(tenantId: string, cutoff: number, batch: number): Promise<number>;
  pruneCache(tenantId: string, cutoff: number, batch: number): Promise<number>;
  /** Organizations deleted whose bulk data is still to be purged, and how to mark one done. */
  pendingPurges?(): Promise<string[]>;
  finishPurge?(tenantId: string): Promise<void>;
  /** Commit every write queued so far, the ledger's deferred ones included. */
  settle?(): Promise<void>;
  /** Whether a tenant still has runs or cache entries stored. */
  holdsData?(tenantId: string): Promise<boolean>;
  /** Batch deletions of expired housekeeping rows; each returns how many rows it deleted. */
  housekeeping?: Array<(batch: number) => Promise<number>>;
}

export interface RetentionReport {
  runsDeleted: number;
  cacheEntriesDeleted: number;
  /** Organizations whose purge finished in this pass. */
  orgsPurged: number;
}

export interface RetentionService {
  /** One full pass over every tenant. */
  runOnce(): Promise<RetentionReport>;
  /** Purge deleted organizations now (after a deletion); joins a pass already running instead of racing it. */
  purgeDeleted(): Promise<void>;
  /**
   * Stop a purge under way at its next batch, before the store closes (an in-process command's end): what it leaves
   * is resumed at the next start. Its failure is reported where it was started, not here.
   */
  stop(): Promise<void>;
  /** Start the periodic pass (first one after `initialDelayMs`); returns a stop function. */
  schedule(options: { intervalMs: number; initialDelayMs: number; onError?: (error: unknown) => void }): () => Promise<void>;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

async function drain(prune: (batch: number) => Promise<number>, stopped: () => boolean): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await prune(RETENTION_BATCH);
    total += deleted;
    if (deleted < RETENTION_BATCH || stopped()) return total;
    await yieldToEventLoop();
  }
}

/** Older than anything: a deleted organization's runs and cache entries all go. */
const EVERYTHING = Number.MAX_SAFE_INTEGER;

export function createRetentionService(deps: RetentionDeps): RetentionService {
  let stopping = false;
  let purging: Promise<void> | null = null;

  async function purgeOnce(report: RetentionReport): Promise<void> {
    for (const tenantId of (await deps.pendingPurges?.()) ?? []) {
      if (stopping) return;
      report.runsDeleted += await drain((batch) => deps.pruneRuns(tenantId, EVERYTHING, batch), () => stopping);
      report.cacheEntriesDeleted += await drain((batch) => deps.pruneCache(tenantId, EVERYTHING, batch), () => stopping);
      if (stopping) return;
      // Requests of the organization under way when it was deleted record their runs and fill its cache as they end
      // (runs still running are not deleted). Its purge is done only once, with every queued write committed, none of
      // that is left; otherwise the next pass resumes it.
      await deps.settle?.();
      if ((await deps.holdsData?.(tenantId)) === true) continue;
      await deps.finishPurge?.(tenantId);
      report.orgsPurged += 1;
    }
  }

  /** One purge at a time: a deletion during a pass waits for that pass's purge, then runs its own. */
  function purge(report: RetentionReport): Promise<void> {
    const run = (purging ?? Promise.resolve()).catch(() => {}).then(() => purgeOnce(report));
    const tracked: Promise<void> = run.finally(() => {
      if (purging === tracked) purging = null;
    });
    purging = tracked;
    return tracked;
  }

  async function stop(): Promise<void> {
    stopping = true;
    await purging?.catch(() => {});
  }

  async function runOnce(): Promise<RetentionReport> {
    const report: RetentionReport = { runsDeleted: 0, cacheEntriesDeleted: 0, orgsPurged: 0 };
    await purge(report);
    for (const task of deps.housekeeping ?? []) {
      if (stopping) break;
      await drain(task, () => stopping);
    }
    for (const tenantId of await deps.tenantIds()) {
      if (stopping) break;
      const days = await deps.retentionDays(tenantId);
      const cutoff = deps.clock.now() - days * DAY_MS;
      report.runsDeleted += await drain((batch) => deps.pruneRuns(tenantId, cutoff, batch), () => stopping);
      report.cacheEntriesDeleted += await drain((batch) => deps.pruneCache(tenantId, cutoff, batch), () => stopping);
    }
    return report;
  }

  return {
    runOnce,
    purgeDeleted: () => purge({ runsDeleted: 0, cacheEntriesDeleted: 0, orgsPurged: 0 }),
    stop,
    schedule({ intervalMs, initialDelayMs, onError }) {
      let timer: NodeJS.Timeout | null = null;
      let running: Promise<unknown> | null = null;
      const tick = () => {
        running = runOnce()
          .catch((error) => onError?.(error))
          .finally(() => {
            running = null;
            if (!stopping) timer = setTimeout(tick, intervalMs).unref();
          });
      };
      timer = setTimeout(tick, initialDelayMs).unref();
      return async () => {
        stopping = true;
        if (timer) clearTimeout(timer);
        await running;
        await stop();
      };
    },
  };
}
