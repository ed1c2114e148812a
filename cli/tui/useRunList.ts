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
import type { RunPage } from './state.ts';

/** The list query of a page: below its cursor, or, without one (the first page, a server without cursors), at its place. */
const pageQuery = (page: RunPage) => (page.before === undefined ? { offset: page.above } : { offset: 0, before: page.before });

/** An answer with its offset counted from the top of the walk, as the range shown counts: the API counts it from the cursor. */
function placed(answer: RunListPage, page: RunPage): RunListPage {
  if (page.before === undefined) return answer;
  return { ...answer, pagination: { ...answer.pagination, offset: page.above + answer.pagination.offset } };
}

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
  page: { limit: number; at: RunPage },
  options: { live: boolean; pollMs: number },
): RunListData {
  const [data, setData] = useState<Omit<RunListData, 'current'> & { query: string | null }>({ page: null, error: null, loading: true, updatedAt: null, query: null });
  // The page asked for; `key` adds how to poll it, which changes no answer (the detail screen stops the list polling).
  const query = JSON.stringify([filters, page.limit, page.at]);
  const key = JSON.stringify([query, options.live, options.pollMs]);
  useEffect(() => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    setData((previous) => ({ ...previous, loading: true }));
    const load = async () => {
      try {
        // `since` is resolved on every fetch, so `since=1h` is a sliding window.
        const result = placed(await source.list(toRunQuery(filters, { limit: page.limit, ...pageQuery(page.at) })), page.at);
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
