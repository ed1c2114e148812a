/**
 * The runs TUI's screen state as a reducer: which screen is open, the list cursor and page, the filters (also as
 * the text of the filter prompt), the trace page of the open run and the last message. Pure, so the navigation
 * and filter rules are tested without rendering; data (rows, facets, events) lives in the data hooks.
 */
import { filterText, INGESTED_VALUES, parseFilterText, type FilterKey, type RunFilterInput } from './format.ts';

/**
 * A page of the run list: the run it lists after (`before`, the page before's `nextBefore`; none on the first page,
 * the newest runs) and how many runs the walk listed above it. Paged by cursor, a walk lists each run once while svc
 * records runs; by offset, every run recorded between two pages would repeat one (docs/gateway.md "Walking the runs
 * list"). A server without cursors (no `nextBefore`) is paged by offset: its pages have no `before`.
 */
export interface RunPage {
  before?: string;
  above: number;
}

const NEWEST_RUNS: readonly RunPage[] = [{ above: 0 }];

export interface TuiState {
  screen: 'list' | 'detail';
  filters: RunFilterInput;
  /** The list pages visited, the first (the newest runs) first and the one shown last: `p` returns to the one before. */
  runPages: readonly RunPage[];
  /** Index of the highlighted row in the page, and the run it was on (the cursor follows it as new runs arrive). */
  cursor: number;
  selectedId: string | null;
  /** The `f` prompt: its text and the last parse error. */
  prompt: null | { text: string; error: string | null };
  /** The run open in the detail screen and its trace cursors: `before` of each page, newest page first. */
  detail: null | { runId: string; pages: Array<number | undefined> };
  /** A one-line notice (export written, a filter cleared...). */
  message: string | null;
  /**
   * The models `m` cycles through while a model filter it set is on: those of the page listed when the cycle began.
   * The page under that filter lists its model alone, and would end the cycle there.
   */
  modelCycle: readonly string[] | null;
}

export type TuiAction =
  | { type: 'move'; delta: number; ids: readonly string[] }
  | { type: 'home' | 'end'; ids: readonly string[] }
  /** `hasMore` and `nextBefore` of the page on screen. */
  | { type: 'olderRuns'; limit: number; hasMore: boolean; nextBefore: string | null }
  | { type: 'newerRuns' }
  | { type: 'open'; runId: string }
  | { type: 'back' }
  | { type: 'cycle'; key: Exclude<FilterKey, 'ingested'>; values: readonly string[] }
  /** `ingested` has its own two values, whatever the page shows. */
  | { type: 'cycle'; key: 'ingested' }
  | { type: 'setFilters'; filters: RunFilterInput }
  | { type: 'clearFilters' }
  | { type: 'promptOpen' }
  | { type: 'promptType'; text: string }
  | { type: 'promptErase' }
  | { type: 'promptSubmit' }
  | { type: 'promptCancel' }
  | { type: 'olderEvents'; nextBefore: number | null }
  | { type: 'newerEvents' }
  | { type: 'message'; text: string | null };

export function initialState(filters: RunFilterInput = {}): TuiState {
  return { screen: 'list', filters, runPages: NEWEST_RUNS, cursor: 0, selectedId: null, prompt: null, detail: null, message: null, modelCycle: null };
}

/** The highlighted index in `ids`: the selected run where it now is, else the remembered index clamped. */
export function cursorIn(state: TuiState, ids: readonly string[]): number {
  if (ids.length === 0) return 0;
  const at = state.selectedId ? ids.indexOf(state.selectedId) : -1;
  return at >= 0 ? at : Math.min(Math.max(state.cursor, 0), ids.length - 1);
}

function select(state: TuiState, ids: readonly string[], index: number): TuiState {
  if (ids.length === 0) return { ...state, cursor: 0, selectedId: null };
  const cursor = Math.min(Math.max(index, 0), ids.length - 1);
  return { ...state, cursor, selectedId: ids[cursor]! };
}

/** New filters start the list from its first page and the top row, and end a model cycle (its models were another list's). */
function withFilters(state: TuiState, filters: RunFilterInput, message: string | null = null): TuiState {
  return { ...state, filters, runPages: NEWEST_RUNS, cursor: 0, selectedId: null, message, modelCycle: null };
}

export function reduce(state: TuiState, action: TuiAction): TuiState {
  switch (action.type) {
    case 'move':
      return select(state, action.ids, cursorIn(state, action.ids) + action.delta);
    case 'home':
      return select(state, action.ids, 0);
    case 'end':
      return select(state, action.ids, action.ids.length - 1);
    case 'olderRuns': {
      if (!action.hasMore) return { ...state, message: 'no older runs' };
      const above = runPage(state).above + action.limit;
      const next: RunPage = action.nextBefore === null ? { above } : { before: action.nextBefore, above };
      return { ...state, runPages: [...state.runPages, next], cursor: 0, selectedId: null, message: null };
    }
    case 'newerRuns':
      if (state.runPages.length <= 1) return { ...state, message: 'already on the newest runs' };
      return { ...state, runPages: state.runPages.slice(0, -1), cursor: 0, selectedId: null, message: null };
    case 'open':
      return { ...state, screen: 'detail', selectedId: action.runId, detail: { runId: action.runId, pages: [undefined] }, message: null };
    case 'back':
      return { ...state, screen: 'list', detail: null, message: null };
    case 'cycle': {
      // all -> each value in order -> all; a current value no longer offered starts again from the first.
      const modelCycle = action.key === 'model' && state.filters.model !== undefined ? state.modelCycle : null;
      const values = action.key === 'ingested' ? INGESTED_VALUES : (modelCycle ?? [...new Set(action.values)]);
      const current = state.filters[action.key];
      const at = current === undefined ? -1 : values.indexOf(current);
      const next = at + 1 < values.length ? values[at + 1] : undefined;
      const cycled = withFilters(state, { ...state.filters, [action.key]: next }, `${action.key}=${next ?? 'all'}`);
      return action.key === 'model' && next !== undefined ? { ...cycled, modelCycle: values } : cycled;
    }
    case 'setFilters':
      return withFilters(state, action.filters);
    case 'clearFilters':
      return withFilters(state, {}, 'filters cleared');
    case 'promptOpen':
      return { ...state, prompt: { text: filterText(state.filters), error: null } };
    case 'promptType':
      return state.prompt ? { ...state, prompt: { text: state.prompt.text + action.text, error: null } } : state;
    case 'promptErase':
      return state.prompt ? { ...state, prompt: { text: state.prompt.text.slice(0, -1), error: null } } : state;
    case 'promptCancel':
      return { ...state, prompt: null };
    case 'promptSubmit': {
      if (!state.prompt) return state;
      const parsed = parseFilterText(state.prompt.text);
      if ('error' in parsed) return { ...state, prompt: { ...state.prompt, error: parsed.error } };
      return { ...withFilters(state, parsed.filters), prompt: null };
    }
    case 'olderEvents':
      if (!state.detail) return state;
      if (action.nextBefore === null) return { ...state, message: 'no older events' };
      return { ...state, detail: { ...state.detail, pages: [...state.detail.pages, action.nextBefore] }, message: null };
    case 'newerEvents':
      if (!state.detail) return state;
      if (state.detail.pages.length <= 1) return { ...state, message: 'already on the newest events' };
      return { ...state, detail: { ...state.detail, pages: state.detail.pages.slice(0, -1) }, message: null };
    case 'message':
      return { ...state, message: action.text };
  }
}

/** The list page on screen. */
export function runPage(state: TuiState): RunPage {
  return state.runPages[state.runPages.length - 1]!;
}

/** The `before` cursor of the trace page on screen (undefined: the newest events). */
export function eventCursor(state: TuiState): number | undefined {
  return state.detail?.pages[state.detail.pages.length - 1];
}
