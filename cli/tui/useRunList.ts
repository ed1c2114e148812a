/**
 * The run list's data: one page for the current filters, fetched again whenever they change and, against a running
 * svc (live), every `pollMs` after the previous answer arrived (never two requests in flight). The page on screen
 * stays until the next one arrives, so a refresh never blanks the list; `current` says whether it (or the error
 * shown) answers the filters and page asked for, or still those before a change.
 */
import { useEffect, useState } from 'react';
import { toRunQuery, type RunFilterInput } from './format.ts';
import { errorText } from './errors.ts';
import type { RunListPage, RunsSource } from './runs-source.ts';

export interface RunListData {
  page: RunListPage | null;
  error: string | null;
  loading: boolean;
  /** When the page on screen was fetched (epoch ms). */
  updatedAt: number | null;
  /** Whether the last read that ended, good or failed, was for the current filters and page. */
  current: boolean;
}

export function useRunList(
  source: RunsSource,
  filters: RunFilterInput,
  page: { limit: number; offset: number },
  options: { live: boolean; pollMs: number },
): RunListData {
  const [data, setData] = useState<Omit<RunListData, 'current'> & { query: string | null }>({ page: null, error: null, loading: true, updatedAt: null, query: null });
  // The page asked for; `key` adds how to poll it, which changes no answer (the detail screen stops the list polling).
  const query = JSON.stringify([filters, page.limit, page.offset]);
  const key = JSON.stringify([query, options.live, options.pollMs]);
  useEffect(() => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    setData((previous) => ({ ...previous, loading: true }));
    const load = async () => {
      try {
        // `since` is resolved on every fetch, so `since=1h` is a sliding window.
        const result = await source.list(toRunQuery(filters, page));
        if (!stopped) setData({ page: result, error: null, loading: false, updatedAt: Date.now(), query });
      } catch (error) {
        if (!stopped) setData((previous) => ({ ...previous, error: errorText(error), loading: false, query }));
      } finally {
        if (!stopped && options.live) timer = setTimeout(load, options.pollMs);
      }
    };
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
    // `key` stands for filters, page and options: a new object with the same content must not refetch.
  }, [source, key]);
  const { query: answered, ...shown } = data;
  return { ...shown, current: answered === query };
}
