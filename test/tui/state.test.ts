/**
 * The runs TUI's rules without rendering: the screen reducer (cursor, pages, filters, prompt, trace pages) and the
 * shared format helpers of the list and the plain table.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { describeFacet, formatUsd, parseFilterText, resolveSince, toRunQuery, toRunRow } from '../../cli/tui/format.ts';
import { cursorIn, eventCursor, initialState, reduce, runPage, type TuiAction, type TuiState } from '../../cli/tui/state.ts';
import type { RunSummary } from '../../src/client/client.ts';

const run = (overrides: Partial<RunSummary> = {}): RunSummary => ({
  id: 'run_a',
  status: 'completed',
  route: 'live',
  wire: 'chat_completions',
  model: 'gpt-4o-mini',
  provider: 'mock',
  mode: 'optimize',
  stream: false,
  appId: null,
  agent: null,
  subject: null,
  requestId: null,
  usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
  costUsd: 0.0000125,
  priced: true,
  savedUsd: 0,
  ghostSavedUsd: 0,
  savedMs: 0,
  latencyMs: 42,
  error: null,
  eventCount: 3,
  routeExplanation: null,
  createdAt: '2026-01-02T03:04:05.678Z',
  completedAt: null,
  ...overrides,
});

const apply = (state: TuiState, ...actions: TuiAction[]) => actions.reduce(reduce, state);

test('a run row carries the list columns: unpriced cost as n/a, observe-mode savings as ~ghost', () => {
  assert.deepEqual(toRunRow(run()), {
    route: 'live',
    status: 'completed',
    model: 'gpt-4o-mini',
    cost: '0.0000125',
    latency: '42',
    savings: '0',
    created: '2026-01-02 03:04:05',
    id: 'run_a',
  });
  const row = toRunRow(run({ priced: false, route: null, latencyMs: null, ghostSavedUsd: 0.5 }));
  assert.equal(row.cost, 'n/a');
  assert.equal(row.route, '-');
  assert.equal(row.latency, '-');
  assert.equal(row.savings, '~0.5');
  assert.equal(formatUsd(12.345), '12.35');
  assert.equal(describeFacet({ live: 2, exact_cache: 5, failed: 0 }), 'exact_cache 5 · live 2');
});

test("a run row of a server that is not svc, whose fields have other types, is text all the same: '-' where a value is not what it should be", () => {
  const odd = run({ model: null, costUsd: 'x', savedUsd: null, ghostSavedUsd: 'y', latencyMs: 'slow', status: 5, route: 7, createdAt: null, id: undefined } as unknown as Partial<RunSummary>);
  const row = toRunRow(odd);
  for (const [key, value] of Object.entries(row)) assert.equal(typeof value, 'string', key);
  assert.deepEqual(row, { route: '7', status: '5', model: '-', cost: '-', latency: '-', savings: '-', created: '-', id: '-' });
  assert.equal(formatUsd('x' as unknown as number), '-');
  assert.equal(formatUsd(Number.NaN), '-');
});

test('since takes ISO times, epoch milliseconds and durations back from now; other text is refused', () => {
  const now = Date.parse('2026-01-02T00:00:00Z');
  assert.equal(resolveSince('2h', now), now - 7_200_000);
  assert.equal(resolveSince('15m', now), now - 900_000);
  assert.equal(resolveSince('1700000000000', now), 1_700_000_000_000);
  assert.equal(resolveSince('2026-01-01T00:00:00Z', now), now - 86_400_000);
  assert.equal(resolveSince('2026-03-07', now), Date.parse('2026-03-07T00:00:00Z'), 'a date alone is its UTC midnight');
  assert.equal(resolveSince('yesterday-ish', now), null);
  // Date.parse alone reads 1.5 as a day of 2001, rolls 2026-02-30 over into March and takes English dates; a year past
  // 9999 is out of svc's range (src/core/instant.ts). test/cli/admin.test.ts sees `svc runs --since` refuse two of them.
  for (const since of ['1.5', '2026-02-30', 'March 7 2026', '2026/11/26', '99999999999999999999', '999999999w']) assert.equal(resolveSince(since, now), null, since);
  assert.deepEqual(toRunQuery({ route: 'live', since: '1h' }, { limit: 10, offset: 20 }, now), { limit: 10, offset: 20, route: 'live', since: now - 3_600_000 });
});

test('the filter prompt parses key=value words; all or an empty value clears a key; mistakes are explained', () => {
  assert.deepEqual(parseFilterText(' route=live  model=gpt-4o status=all since= '), { filters: { route: 'live', model: 'gpt-4o' } });
  assert.match((parseFilterText('colour=red') as { error: string }).error, /route, status, model, since or ingested/);
  assert.match((parseFilterText('since=soon') as { error: string }).error, /15m/);
  // What svc's API would read otherwise: a day of 2001, a rolled-over date, a year past 9999.
  for (const since of ['1.5', '2026-02-30', 'March 7 2026', '99999999999999999999']) assert.ok('error' in parseFilterText(`since=${since}`), since);
  // ingested=true lists only SDK-ingested prompts, ingested=false leaves them out; nothing else is a value of it.
  assert.deepEqual(parseFilterText('route=live ingested=false'), { filters: { route: 'live', ingested: 'false' } });
  assert.match((parseFilterText('ingested=yes') as { error: string }).error, /give true .* or false/);
  assert.deepEqual(toRunQuery({ route: 'live', ingested: 'false' }, { limit: 10, offset: 0 }), { limit: 10, offset: 0, route: 'live', ingested: false });
  assert.deepEqual(toRunQuery({ ingested: 'true' }, { limit: 10, offset: 0 }), { limit: 10, offset: 0, ingested: true });
});

test('the cursor moves within the page, stays on its run when new runs arrive above it, and clamps', () => {
  let state = initialState();
  state = apply(state, { type: 'move', delta: 1, ids: ['a', 'b', 'c'] });
  assert.equal(state.selectedId, 'b');
  // Two new runs arrive at the top: the highlighted run is now the fourth row.
  assert.equal(cursorIn(state, ['y', 'z', 'a', 'b', 'c']), 3);
  state = apply(state, { type: 'move', delta: 10, ids: ['y', 'z', 'a', 'b', 'c'] });
  assert.equal(state.selectedId, 'c');
  state = apply(state, { type: 'move', delta: -99, ids: ['y', 'z', 'a', 'b', 'c'] });
  assert.equal(state.selectedId, 'y');
  // The run left the page (filtered away): the remembered index is used, clamped to the rows there are.
  assert.equal(cursorIn({ ...state, selectedId: 'gone', cursor: 7 }, ['p', 'q']), 1);
});

test('pages of runs go older by the cursor of the page shown, only while there are more, and newer back through the pages visited', () => {
  let state = apply(initialState(), { type: 'newerRuns' });
  assert.deepEqual(runPage(state), { above: 0 });
  assert.match(state.message ?? '', /newest/);
  state = apply(
    state,
    { type: 'olderRuns', limit: 50, hasMore: true, nextBefore: 'run_b' },
    { type: 'olderRuns', limit: 50, hasMore: true, nextBefore: 'run_c' },
  );
  assert.deepEqual(runPage(state), { before: 'run_c', above: 100 });
  state = apply(state, { type: 'olderRuns', limit: 50, hasMore: false, nextBefore: null });
  assert.match(state.message ?? '', /no older runs/);
  assert.deepEqual(runPage(state), { before: 'run_c', above: 100 });
  // Back to exactly the page seen before, whatever runs were recorded since; then the first, the newest runs.
  state = apply(state, { type: 'newerRuns' });
  assert.deepEqual(runPage(state), { before: 'run_b', above: 50 });
  assert.deepEqual(runPage(apply(state, { type: 'newerRuns' })), { above: 0 });
  // A server without cursors (no nextBefore) is paged by offset: the page's place.
  assert.deepEqual(runPage(apply(initialState(), { type: 'olderRuns', limit: 50, hasMore: true, nextBefore: null })), { above: 50 });
});

test('cycling a filter walks all -> each offered value -> all, and resets the page and cursor', () => {
  let state: TuiState = { ...initialState(), runPages: [{ above: 0 }, { before: 'run_b', above: 50 }], cursor: 3, selectedId: 'x' };
  const values = ['exact_cache', 'live'];
  state = apply(state, { type: 'cycle', key: 'route', values });
  assert.equal(state.filters.route, 'exact_cache');
  assert.deepEqual(state.runPages, [{ above: 0 }]);
  assert.equal(state.selectedId, null);
  state = apply(state, { type: 'cycle', key: 'route', values });
  assert.equal(state.filters.route, 'live');
  state = apply(state, { type: 'cycle', key: 'route', values });
  assert.equal(state.filters.route, undefined);
  assert.equal(state.message, 'route=all');
  // A value no longer offered starts again from the first.
  assert.equal(apply({ ...state, filters: { route: 'artifact' } }, { type: 'cycle', key: 'route', values }).filters.route, 'exact_cache');
});

test('cycling the model filter walks the models of the page it began on, though the filtered page lists one; other filters end it', () => {
  const cycleOn = (state: TuiState, values: string[]) => apply(state, { type: 'cycle', key: 'model', values });
  let state = cycleOn(initialState(), ['gpt-4o', 'gpt-4o-mini']);
  assert.equal(state.filters.model, 'gpt-4o');
  // The page under model=gpt-4o lists gpt-4o alone: the cycle goes on through the models it began with.
  state = cycleOn(state, ['gpt-4o']);
  assert.equal(state.filters.model, 'gpt-4o-mini');
  state = cycleOn(state, ['gpt-4o-mini']);
  assert.deepEqual([state.filters.model, state.message], [undefined, 'model=all']);
  // A model set otherwise (the prompt), or kept through another filter's change, offers the page's models: then all.
  state = apply(cycleOn(initialState(), ['gpt-4o', 'gpt-4o-mini']), { type: 'cycle', key: 'status', values: ['failed'] });
  assert.deepEqual(state.filters, { model: 'gpt-4o', status: 'failed' });
  assert.equal(cycleOn(state, ['gpt-4o']).filters.model, undefined);
});

test('cycling the ingested filter walks all -> true -> false -> all whatever the page shows, and resets the page and cursor', () => {
  let state: TuiState = { ...initialState({ route: 'live' }), runPages: [{ above: 0 }, { before: 'run_b', above: 50 }], cursor: 3, selectedId: 'x' };
  state = apply(state, { type: 'cycle', key: 'ingested' });
  assert.deepEqual([state.filters.ingested, state.message, runPage(state), state.selectedId], ['true', 'ingested=true', { above: 0 }, null]);
  assert.equal(state.filters.route, 'live', 'the other filters stay');
  state = apply(state, { type: 'cycle', key: 'ingested' });
  assert.deepEqual([state.filters.ingested, state.message], ['false', 'ingested=false']);
  state = apply(state, { type: 'cycle', key: 'ingested' });
  assert.deepEqual([state.filters.ingested, state.message], [undefined, 'ingested=all']);
});

test('the filter prompt starts from the active filters, applies on submit and keeps its text on an error', () => {
  let state = apply(initialState({ status: 'failed' }), { type: 'promptOpen' });
  assert.equal(state.prompt?.text, 'status=failed ');
  state = apply(state, { type: 'promptType', text: 'since=zz' });
  state = apply(state, { type: 'promptSubmit' });
  assert.match(state.prompt?.error ?? '', /since=zz/);
  state = apply(state, { type: 'promptErase' }, { type: 'promptErase' }, { type: 'promptType', text: '2h' }, { type: 'promptSubmit' });
  assert.equal(state.prompt, null);
  assert.deepEqual(state.filters, { status: 'failed', since: '2h' });
  assert.deepEqual(apply(state, { type: 'promptOpen' }, { type: 'promptCancel' }).filters, state.filters);
  assert.deepEqual(apply(state, { type: 'clearFilters' }).filters, {});
});

test('the detail screen keeps a stack of trace pages: older pushes nextBefore, newer pops, back closes it', () => {
  let state = apply(initialState(), { type: 'open', runId: 'run_a' });
  assert.equal(state.screen, 'detail');
  assert.equal(eventCursor(state), undefined);
  state = apply(state, { type: 'olderEvents', nextBefore: 8 }, { type: 'olderEvents', nextBefore: 5 });
  assert.equal(eventCursor(state), 5);
  assert.equal(apply(state, { type: 'olderEvents', nextBefore: null }).message, 'no older events');
  state = apply(state, { type: 'newerEvents' });
  assert.equal(eventCursor(state), 8);
  state = apply(state, { type: 'newerEvents' }, { type: 'newerEvents' });
  assert.equal(eventCursor(state), undefined);
  assert.match(state.message ?? '', /newest/);
  state = apply(state, { type: 'back' });
  assert.equal(state.screen, 'list');
  assert.equal(state.selectedId, 'run_a', 'the list comes back on the run that was open');
});
