/**
 * The detail screen's data for one run: the run and its side effects, one page of trace events (`before` pages to
 * older ones), its integrity and its economics. Against a running svc (live) the run's newest trace event is read
 * every `pollMs` after the previous answer arrived, and the rest only when the run changed: a watched run fills in as
 * it progresses, at one small request per interval while it does not. The run's detail is not what is polled: it
 * carries every side effect and feedback record of the run whole, megabytes on a busy one. Another trace page (or
 * page size, on a resize) of the run on screen reads only that page's events.
 */
import { useEffect, useRef, useState } from 'react';
import { errorText } from './errors.ts';
import type { EconomicsView, EventPage, IntegrityView, RunDetailView, RunsSource } from './runs-source.ts';

export interface RunDetailData {
  /** The run these answers belong to (answers of a previously open run are never shown). */
  runId: string | null;
  detail: RunDetailView | null;
  events: EventPage | null;
  integrity: IntegrityView | null;
  economics: EconomicsView | null;
  error: string | null;
  loading: boolean;
  /**
   * Whether the last read that ended, good or failed, was for the run and trace page asked for: until then the events
   * on screen are another page's, and their `nextBefore` is not the one after the page asked for.
   */
  current: boolean;
}

type Answered = Omit<RunDetailData, 'current'> & { page: string | null };

const EMPTY: Answered = { runId: null, detail: null, events: null, integrity: null, economics: null, error: null, loading: true, page: null };

/**
 * How far a run has progressed: its event count, the seq of its newest event. Everything the screen shows moves it:
 * side effects and SDK traces append events, and a run ends (status, outcome, economics) by chaining its closing one.
 */
const headOf = (page: EventPage) => page.events[page.events.length - 1]?.seq ?? 0;

export function useRunDetail(
  source: RunsSource,
  runId: string | null,
  page: { limit: number; before: number | undefined },
  options: { live: boolean; pollMs: number },
): RunDetailData {
  const [data, setData] = useState<Answered>(EMPTY);
  // The page asked for, as the answer to it is marked.
  const asked = JSON.stringify([runId, page.limit, page.before ?? null]);
  /** The run on screen and the event count its detail was read at: another trace page of it reads only its events. */
  const shown = useRef<{ runId: string; version: number } | null>(null);
  useEffect(() => {
    if (runId === null) {
      shown.current = null;
      setData(EMPTY);
      return;
    }
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    let version = shown.current?.runId === runId ? shown.current.version : null;
    let pageRead = false;
    setData((previous) => (previous.runId === runId ? { ...previous, loading: true } : { ...EMPTY, runId }));
    const load = async () => {
      try {
        if (version !== null && !pageRead) {
          // Another page (or page size) of the run on screen: the run, its integrity and economics are those shown;
          // on a run of 10,000 events they are megabytes to read and a chain to recompute, for nothing new.
          const events = await source.events(runId, page);
          if (stopped) return;
          pageRead = true;
          setData((previous) => ({ ...previous, events, error: null, loading: false, page: asked }));
          return;
        }
        if (version !== null) {
          const head = headOf(await source.events(runId, { limit: 1 }));
          if (stopped) return;
          if (head === version) {
            setData((previous) => (previous.error === null && !previous.loading ? previous : { ...previous, error: null, loading: false }));
            return;
          }
        }
        const detail = await source.detail(runId);
        if (stopped) return;
        const [events, integrity, economics] = await Promise.all([source.events(runId, page), source.integrity(runId), source.economics(runId)]);
        if (stopped) return;
        // A run whose answer gives no event count (a --url server that is not svc) is read whole on every refresh.
        version = detail.run.eventCount;
        pageRead = true;
        shown.current = version === null ? null : { runId, version };
        setData({ runId, detail, events, integrity, economics, error: null, loading: false, page: asked });
      } catch (error) {
        if (!stopped) setData((previous) => ({ ...previous, runId, error: errorText(error), loading: false, page: asked }));
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
  const { page: answered, ...answers } = data;
  return { ...answers, current: answered === asked };
}
