/**
 * The runs TUI: the list and detail screens, their keys, and the data hooks that feed them. State lives in the
 * reducer of state.ts; data in useRunList/useRunDetail; the screens are pure views.
 *
 * Keys, list: ↑/↓ or k/j move, PgUp/PgDn a screen, Home/End (g/G), Enter opens the run, r/s/m/i cycle the route,
 * status, model and ingested filters, f opens the filter prompt, c clears the filters, n/p the older/newer page of runs,
 * q, Esc or Ctrl-C quits (Ctrl-C from any screen). Detail: n or ] older events, p or [ newer events, e exports the evidence packet, q, Esc or ← back.
 */
import { Box, Text, useApp, useInput, useStdout, type Key } from 'ink';
import { useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, type ReactNode } from 'react';
import { errorText } from './errors.ts';
import { keysOf } from './keys.ts';
import { toRunRow, type RunFilterInput } from './format.ts';
import { RunDetail } from './RunDetail.tsx';
import { RunList, rowsPerScreen, type ConnectionInfo, type RunListProps } from './RunList.tsx';
import type { RunsSource } from './runs-source.ts';
import { cursorIn, eventCursor, initialState, reduce, runPage, type TuiAction } from './state.ts';
import { useRunDetail } from './useRunDetail.ts';
import { useRunList } from './useRunList.ts';

export interface RunsAppProps {
  source: RunsSource;
  connection: ConnectionInfo;
  initialFilters?: RunFilterInput;
  /** Runs per list page (the API allows 1-200). */
  limit?: number;
  /** Trace events per detail page; by default what fits the terminal. */
  eventPageSize?: number;
  /** Refresh interval of a live view. */
  pollMs?: number;
  color?: boolean;
}

/** Lines of the list screen that are not rows: header, notice, filters, facets, column titles, status, help. */
const LIST_CHROME = 7;
/** Lines of the detail screen around the timeline (headline, sections, help), and of its compact layout. */
const DETAIL_CHROME = 28;
const COMPACT_DETAIL_CHROME = 20;
/** The fewest trace events a detail page shows. */
const MIN_EVENTS = 3;
/**
 * The fewest terminal rows the screens are drawn on: two lines (see `screenHeight`), the highlighted run and the
 * filter prompt's line. A smaller terminal gets one line saying so; the keys still work.
 */
const MIN_ROWS = 3;

function useTerminalSize(): { rows: number; columns: number } {
  const { stdout } = useStdout();
  const read = () => ({ rows: stdout.rows || 24, columns: stdout.columns || 80 });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout]);
  return size;
}

/**
 * List keys that act on the page on screen: its rows (moves, Enter), its facets and models (r/s/m) or its end (n).
 * After a filter or page change they wait for the new page (see `actOnKeys`).
 */
function readsPage(input: string, key: Key): boolean {
  return (
    key.upArrow || key.downArrow || key.pageUp || key.pageDown || key.home || key.end || key.return || key.rightArrow || ['j', 'k', 'g', 'G', 'r', 's', 'm', 'n'].includes(input)
  );
}

/** Detail keys that act on the trace page on screen: `n`/`]` page on from its end. */
const readsEventPage = (input: string) => input === 'n' || input === ']';

/**
 * A screen cut at the terminal's height: what does not fit is cut at the bottom. The view keeps its own height
 * (no shrinking): squeezed into the box, its lines were drawn over each other (at 40x10 the route section over the
 * headline, which was lost).
 */
function Screen(props: { height: number; children: ReactNode }) {
  return (
    <Box flexDirection="column" height={props.height} overflowY="hidden">
      <Box flexDirection="column" flexShrink={0}>
        {props.children}
      </Box>
    </Box>
  );
}

/**
 * Where, among the keys queued behind one that waits for a page, a `q` or `Esc` is that should act at once (quit the
 * list, go back from the detail): a stalled svc would keep it waiting as long as the read does. -1 if there is none,
 * or if a key before it changes what it means, so it keeps its turn: `f` or `/` (it would be text of the prompt),
 * `Enter` or `→` (it would go back from the run they open), `←` on the detail (it would quit the list).
 */
function leavingKeyBehind(waiting: [string, Key], queued: Array<[string, Key]>, screen: 'list' | 'detail'): number {
  const changesMeaning = ([input, key]: [string, Key]) =>
    screen === 'list' ? input === 'f' || input === '/' || key.return || key.rightArrow : key.leftArrow;
  if (changesMeaning(waiting)) return -1;
  for (const [index, [input, key]] of queued.entries()) {
    if ((input === 'q' && !key.ctrl && !key.meta) || key.escape) return index;
    if (changesMeaning([input, key])) return -1;
  }
  return -1;
}

/** What the key handler did with a key: `wait` leaves it (and the keys after it) for a later render. */
type KeyOutcome = 'done' | 'wait';

const offered = (counts: Record<string, number> | undefined) =>
  Object.entries(counts ?? {})
    .filter(([value, n]) => n > 0 && value !== 'unknown')
    .map(([value]) => value)
    .sort();

export function RunsApp(props: RunsAppProps) {
  const { source, connection } = props;
  const limit = props.limit ?? 50;
  const pollMs = props.pollMs ?? 1000;
  const color = props.color ?? false;
  const { exit } = useApp();
  const size = useTerminalSize();
  const [state, dispatchNow] = useReducer(reduce, props.initialFilters ?? {}, initialState);
  /** Whether the key being handled changed the state (see `actOnKeys`). */
  const dispatched = useRef(false);
  const dispatch = useCallback((action: TuiAction) => {
    dispatched.current = true;
    dispatchNow(action);
  }, []);

  // The list is refreshed only while it is on screen: the detail screen polls its own run instead.
  const list = useRunList(source, state.filters, { limit, at: runPage(state) }, { live: connection.live && state.screen === 'list', pollMs });
  // A terminal too short for the full detail (80x24) gets the compact one: drawn taller than the terminal, the screen
  // would scroll its headline and integrity badge out of sight.
  const compact = size.rows < DETAIL_CHROME + MIN_EVENTS;
  const eventPageSize = props.eventPageSize ?? Math.max(MIN_EVENTS, size.rows - (compact ? COMPACT_DETAIL_CHROME : DETAIL_CHROME));
  const detail = useRunDetail(
    source,
    state.detail?.runId ?? null,
    { limit: eventPageSize, before: eventCursor(state) },
    { live: connection.live, pollMs },
  );

  // Models have no facet in the list answer: `m` offers those of the runs listed (the reducer keeps them while a cycle
  // it began is on), not every model seen before, under other filters or on other pages, which would list none.
  // Text models only: a server that is not svc may send other types, and the filter takes text.
  const models = useMemo(
    () => [...new Set(list.page?.runs.map((run) => run.model).filter((model) => typeof model === 'string' && model !== ''))].sort(),
    [list.page],
  );

  const rows = useMemo(() => list.page?.runs.map(toRunRow) ?? [], [list.page]);
  const ids = useMemo(() => rows.map((row) => row.id), [rows]);
  const cursor = cursorIn(state, ids);
  const listHeight = Math.max(3, size.rows - LIST_CHROME - (connection.notice ? 1 : 0) - (state.prompt ? 2 : 0) - 2);
  // Never more lines than the terminal has: drawn taller, a screen scrolls its top (the list header, the run's headline
  // and integrity badge) out of sight, so on a terminal too short for it the bottom is cut instead. One line short of
  // the terminal: Ink clears the whole terminal on every redraw of an output as tall as it.
  const screenHeight = Math.max(1, size.rows - 1);
  const listProps: RunListProps = {
    rows,
    cursor,
    width: size.columns,
    height: listHeight,
    lines: screenHeight,
    filters: state.filters,
    facets: list.page?.facets ?? null,
    pagination: list.page?.pagination ?? null,
    connection,
    updatedAt: list.updatedAt,
    loading: list.loading,
    error: list.error,
    message: state.message,
    prompt: state.prompt,
    color,
  };

  const exportEvidence = (runId: string) => {
    dispatch({ type: 'message', text: `exporting the evidence packet of ${runId}…` });
    source.exportEvidence(runId).then(
      (path) => dispatch({ type: 'message', text: `evidence packet written to ${path}` }),
      (error: unknown) => dispatch({ type: 'message', text: `export failed: ${errorText(error)}` }),
    );
  };

  const onKey = (input: string, key: Key): KeyOutcome => {
    // Ink quits on a Ctrl-C alone; one that came with other keys reaches the view (keys.ts).
    if (input === 'c' && key.ctrl) {
      exit();
      return 'done';
    }
    // Typed after a filter or page change (`c j j`), a key is meant for the new page, not for the one still on screen
    // until it arrives: it waits for it, or for the error that says it will not come. So does an `n` typed after an
    // `n` on the detail: the trace page on screen until then would page to the one already asked for.
    const listWaits = state.screen === 'list' && !state.prompt && !list.current && readsPage(input, key);
    const detailWaits = state.screen === 'detail' && !detail.current && readsEventPage(input);
    if (listWaits || detailWaits) {
      // Ctrl-C quits from anywhere, also from behind keys that wait.
      if (pendingKeys.current.some(([text, pending]) => text === 'c' && pending.ctrl)) exit();
      // So does q (Esc), or it goes back from the detail: the keys before it, this one included, are dropped.
      const leaving = leavingKeyBehind([input, key], pendingKeys.current, state.screen);
      if (leaving >= 0) {
        pendingKeys.current.splice(0, leaving);
        return 'done';
      }
      return 'wait';
    }
    if (state.prompt) {
      if (key.return) dispatch({ type: 'promptSubmit' });
      else if (key.escape) dispatch({ type: 'promptCancel' });
      else if (key.backspace || key.delete) dispatch({ type: 'promptErase' });
      else if (input && !key.ctrl && !key.meta) dispatch({ type: 'promptType', text: input });
      return 'done';
    }
    if (state.screen === 'detail' && state.detail) {
      if (input === 'q' || key.escape || key.leftArrow) dispatch({ type: 'back' });
      else if (input === 'n' || input === ']') {
        if (detail.events) dispatch({ type: 'olderEvents', nextBefore: detail.events.window.hasMore ? detail.events.window.nextBefore : null });
      } else if (input === 'p' || input === '[') dispatch({ type: 'newerEvents' });
      else if (input === 'e') exportEvidence(state.detail.runId);
      return 'done';
    }
    if (input === 'q' || key.escape) exit();
    else if (key.upArrow || input === 'k') dispatch({ type: 'move', delta: -1, ids });
    else if (key.downArrow || input === 'j') dispatch({ type: 'move', delta: 1, ids });
    // By the rows the screen shows: a page key shows the screen of rows before or after the one on screen.
    else if (key.pageUp) dispatch({ type: 'move', delta: -rowsPerScreen(listProps), ids });
    else if (key.pageDown) dispatch({ type: 'move', delta: rowsPerScreen(listProps), ids });
    else if (key.home || input === 'g') dispatch({ type: 'home', ids });
    else if (key.end || input === 'G') dispatch({ type: 'end', ids });
    else if (key.return || key.rightArrow) {
      const runId = ids[cursor];
      if (runId) dispatch({ type: 'open', runId });
    } else if (input === 'r') dispatch({ type: 'cycle', key: 'route', values: offered(list.page?.facets.route) });
    else if (input === 's') dispatch({ type: 'cycle', key: 'status', values: offered(list.page?.facets.status) });
    else if (input === 'm') dispatch({ type: 'cycle', key: 'model', values: models });
    else if (input === 'i') dispatch({ type: 'cycle', key: 'ingested' });
    else if (input === 'f' || input === '/') dispatch({ type: 'promptOpen' });
    else if (input === 'c') dispatch({ type: 'clearFilters' });
    else if (input === 'n') dispatch({ type: 'olderRuns', limit, hasMore: list.page?.pagination.hasMore ?? false, nextBefore: list.page?.pagination.nextBefore ?? null });
    else if (input === 'p') dispatch({ type: 'newerRuns' });
    return 'done';
  };
  // Keys go to the handler of the last committed render: a frame on screen may be answered before React runs the
  // passive effects that would re-subscribe a new closure, and a stale one would act on the previous rows.
  const latestOnKey = useRef(onKey);
  // The keys of a chunk (keys.ts) are acted on in turn, each that changes the state after its render: the handler of
  // the frame before it would open the run a `j` just left, or read the text typed after `f` as list keys. A key that
  // waits for a new page stays first in line, with the keys after it, until a render brings that page.
  const pendingKeys = useRef<Array<[string, Key]>>([]);
  const actOnKeys = useCallback(() => {
    for (let next = pendingKeys.current.shift(); next; next = pendingKeys.current.shift()) {
      dispatched.current = false;
      if (latestOnKey.current(...next) === 'wait') {
        pendingKeys.current.unshift(next);
        return;
      }
      if (dispatched.current) return;
    }
  }, []);
  useLayoutEffect(() => {
    latestOnKey.current = onKey;
    actOnKeys();
  });
  useInput(
    useCallback(
      (input: string, key: Key) => {
        pendingKeys.current.push(...keysOf(input, key));
        actOnKeys();
      },
      [actOnKeys],
    ),
  );

  if (size.rows < MIN_ROWS) {
    return (
      <Text wrap="truncate-end">
        terminal too small: svc runs needs {MIN_ROWS} rows, this one has {size.rows}
      </Text>
    );
  }
  if (state.screen === 'detail' && state.detail) {
    const current = detail.runId === state.detail.runId ? detail : null;
    return (
      <Screen height={screenHeight}>
        <RunDetail
          runId={state.detail.runId}
          run={current?.detail?.run ?? null}
          sideEffects={current?.detail?.sideEffects ?? []}
          sideEffectTotal={current?.detail?.sideEffectTotal ?? 0}
          events={current?.events ?? null}
          pageNumber={state.detail.pages.length}
          integrity={current?.integrity ?? null}
          economics={current?.economics ?? null}
          loading={current?.loading ?? true}
          error={current?.error ?? null}
          message={state.message}
          width={size.columns}
          compact={compact}
          color={color}
        />
      </Screen>
    );
  }
  return (
    <Screen height={screenHeight}>
      <RunList {...listProps} />
    </Screen>
  );
}
