/**
 * The detail screen's data for one run: the run and its side effects, one page of trace events (`before` pages to
 * older ones), its integrity and its economics. Against a running svc (live) the run is fetched again every
 * `pollMs` after the previous answer arrived, and the rest only when the run changed (new events, a new status):
 * a watched run fills in as it progresses, at one request per interval while it does not.
 */
import { useEffect, useState } from 'react';
import type { RunIntegrity } from '../../src/client/client.ts';
import { errorText } from './errors.ts';
import type { EventPage, RunDetailView, RunsSource } from './runs-source.ts';

export interface RunDetailData {
  /** The run these answers belong to (answers of a previously open run are never shown). */
  runId: string | null;
  detail: RunDetailView | null;
  events: EventPage | null;
  integrity: RunIntegrity | null;
  economics: Record<string, any> | null;
  error: string | null;
  loading: boolean;
}

const EMPTY: RunDetailData = { runId: null, detail: null, events: null, integrity: null, economics: null, error: null, loading: true };

/** What changes when a run progresses: its event count (side effects and SDK traces append events) and status. */
const versionOf = (detail: RunDetailView) => `${detail.run.eventCount}:${detail.run.status}:${detail.run.completedAt ?? ''}`;

export function useRunDetail(
  source: RunsSource,
  runId: string | null,
  page: { limit: number; before: number | undefined },
  options: { live: boolean; pollMs: number },
): RunDetailData {
  const [data, setData] = useState<RunDetailData>(EMPTY);
  useEffect(() => {
    if (runId === null) {
      setData(EMPTY);
      return;
    }
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let version: string | null = null;
    setData((previous) => (previous.runId === runId ? { ...previous, loading: true } : { ...EMPTY, runId }));
    const load = async () => {
      try {
        const detail = await source.detail(runId);
        if (stopped) return;
        if (versionOf(detail) === version) {
          setData((previous) => ({ ...previous, detail, error: null, loading: false }));
        } else {
          const [events, integrity, economics] = await Promise.all([source.events(runId, page), source.integrity(runId), source.economics(runId)]);
          if (stopped) return;
          version = versionOf(detail);
          setData({ runId, detail, events, integrity, economics, error: null, loading: false });
        }
      } catch (error) {
        if (!stopped) setData((previous) => ({ ...previous, runId, error: errorText(error), loading: false }));
      } finally {
        if (!stopped && options.live) timer = setTimeout(load, options.pollMs);
      }
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [source, runId, page.limit, page.before, options.live, options.pollMs]);
  return data;
}
