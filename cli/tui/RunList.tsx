/**
 * The run list screen: connection line (live or in-process), active filters with route/status facet counts, the
 * runs as aligned columns with the highlighted one, the filter prompt when open, and the key help; on a terminal too
 * short for all of them the decorations give way to the highlighted row and the prompt (`listLayout`). A pure view:
 * everything arrives as props.
 */
import { Box, Text } from 'ink';
import type { Pagination } from '../../src/client/client.ts';
import { columnsOf, padEndColumns, padStartColumns, wrappedLines } from '../terminal-width.ts';
import { clip, clipStart, describeFacet, describeFilters, RUN_COLUMNS, type RunFilterInput, type RunRow } from './format.ts';

/** Short headers for the screen; the plain table uses the longer RUN_COLUMNS ones. */
const SCREEN_HEADERS: Record<keyof RunRow, string> = {
  route: 'ROUTE',
  status: 'STATUS',
  model: 'MODEL',
  cost: 'COST $',
  latency: 'LAT MS',
  savings: 'SAVED $',
  created: 'CREATED (UTC)',
  id: 'ID',
};
const KEYS = Object.keys(RUN_COLUMNS) as Array<keyof RunRow>;
/** Columns of text cut to fit: svc's statuses, routes and times are shorter, a server that is not svc's may not be. */
const MAX_WIDTH: Partial<Record<keyof RunRow, number>> = { model: 24, route: 13, status: 12, created: 19 };
const RIGHT_ALIGNED = new Set<keyof RunRow>(['cost', 'latency', 'savings']);

export interface ConnectionInfo {
  /** Where the data is, e.g. `/data/svc.sock (local socket)`; a live one's header says before it whether it is live. */
  label: string;
  live: boolean;
  /** Shown in the header when set (in-process: live updates need svc serve). */
  notice?: string | undefined;
}

export interface RunListProps {
  rows: RunRow[];
  cursor: number;
  /** Terminal width. */
  width: number;
  /** How many rows fit on screen, at most. */
  height: number;
  /** The lines the screen has: fewer rows are shown where the texts above and below them wrap to more lines. */
  lines: number;
  filters: RunFilterInput;
  facets: { route: Record<string, number>; status: Record<string, number> } | null;
  pagination: Pagination | null;
  connection: ConnectionInfo;
  updatedAt: number | null;
  loading: boolean;
  error: string | null;
  message: string | null;
  prompt: { text: string; error: string | null } | null;
  color: boolean;
}

function columnWidths(rows: RunRow[], createdHeader = SCREEN_HEADERS.created): Record<keyof RunRow, number> {
  const widths = {} as Record<keyof RunRow, number>;
  for (const key of KEYS) {
    const header = key === 'created' ? createdHeader : SCREEN_HEADERS[key];
    const widest = Math.max(columnsOf(header), ...rows.map((row) => columnsOf(row[key])));
    widths[key] = Math.min(widest, MAX_WIDTH[key] ?? widest);
  }
  return widths;
}

function line(keys: ReadonlyArray<keyof RunRow>, cells: Record<keyof RunRow, string>, widths: Record<keyof RunRow, number>, gap: string): string {
  return keys
    .map((key) => {
      const text = key === 'id' ? clipStart(cells[key], widths[key]) : clip(cells[key], widths[key]);
      return key === 'id' ? text : RIGHT_ALIGNED.has(key) ? padStartColumns(text, widths[key]) : padEndColumns(text, widths[key]);
    })
    .join(gap);
}

/**
 * The fewest characters of an id worth showing: an ellipsis and the id's last 8 hex digits, of its random part. Run
 * ids start with their creation time, so the runs of an hour share their first dozen characters.
 */
const MIN_ID_WIDTH = 9;

/**
 * The columns cut further for the id's end once the others gave way, in turn, and the narrowest each is cut to: a
 * long model name (to its first characters and `…`), then a route (`exact_cache`) and a status to their headers.
 */
const CUT_FOR_ID: ReadonlyArray<[keyof RunRow, number]> = [
  ['model', 8],
  ['route', SCREEN_HEADERS.route.length],
  ['status', SCREEN_HEADERS.status.length],
];

/** The columns a terminal too narrow for the id's end leaves out, first to last: the id tells rows apart, they do not. */
const GIVE_WAY: ReadonlyArray<keyof RunRow> = ['savings', 'latency', 'cost', 'created'];

/**
 * On a narrow terminal the created column keeps only the time of day and columns sit closer. An id that still does
 * not fit (80 columns) keeps its end, the part that tells runs apart, as long as 9 characters of it fit; on a
 * narrower one (40 columns) the savings, latency, cost and time columns give way, in that order, and then a long model
 * name, the route and the status are cut further, until they do.
 */
function layout(rows: RunRow[], width: number) {
  const full = columnWidths(rows);
  const fullWidth = 2 + KEYS.reduce((sum, key) => sum + full[key], 0) + 2 * (KEYS.length - 1);
  if (fullWidth <= width) return { keys: KEYS, rows, headers: SCREEN_HEADERS, widths: full, gap: '  ' };
  const compact = rows.map((row) => ({ ...row, created: row.created.slice(11) || row.created }));
  const widths = columnWidths(compact, 'TIME (UTC)');
  let keys = KEYS;
  const idRoom = () => width - 2 - keys.reduce((sum, key) => sum + (key === 'id' ? 0 : widths[key]), 0) - (keys.length - 1);
  for (const key of GIVE_WAY) {
    if (idRoom() >= Math.min(widths.id, MIN_ID_WIDTH)) break;
    keys = keys.filter((shown) => shown !== key);
  }
  // A long model name (a fine-tuned deployment's), then the route and the status are cut further rather than the id.
  for (const [key, narrowest] of CUT_FOR_ID) {
    const idShort = Math.min(widths.id, MIN_ID_WIDTH) - idRoom();
    if (idShort <= 0) break;
    widths[key] = Math.max(Math.min(widths[key], narrowest), widths[key] - idShort);
  }
  if (idRoom() < widths.id && idRoom() >= MIN_ID_WIDTH) widths.id = idRoom();
  return { keys, rows: compact, headers: { ...SCREEN_HEADERS, created: 'TIME (UTC)' }, widths, gap: ' ' };
}

const PROMPT_HELP = 'key=value words: route, status, model, since (ISO, epoch ms or 15m/2h/7d), ingested (true/false); Enter applies, Esc cancels';

/** What an empty list says: a list that could not be read is no empty list (the error line below says why). */
function emptyText(props: RunListProps): string {
  if (props.loading) return 'loading…';
  if (props.error) return 'No runs shown: the list could not be read.';
  if (Object.values(props.filters).some((value) => value !== undefined && value !== '')) return 'No runs match these filters.';
  // Past the first page (runs deleted meanwhile) the ledger may hold runs all the same.
  return (props.pagination?.offset ?? 0) > 0 ? 'No runs on this page.' : 'No runs recorded yet.';
}

/**
 * A live view whose last read failed (svc stopped, a network cut) is not live, whatever its page on screen says: the
 * header must not claim it is, next to a refresh time that no longer moves. It is live again from the next good read.
 */
const liveness = (props: RunListProps) => (props.error ? 'not live' : 'live');

function updatedText(props: RunListProps): string {
  const at = props.updatedAt ? new Date(props.updatedAt).toISOString().slice(11, 19) : '-';
  return props.error ? `last updated ${at}` : `updated ${at}${props.loading ? ' …' : ''}`;
}

function filtersLineOf(props: RunListProps): string {
  const { pagination } = props;
  const range = pagination
    ? pagination.total === 0 || props.rows.length === 0
      ? `0 of ${pagination.total}`
      : `${pagination.offset + 1}-${pagination.offset + props.rows.length} of ${pagination.total}`
    : '…';
  return `filters: ${describeFilters(props.filters)} · runs ${range}`;
}

/** The lines of the list screen other than its rows, in the order they are drawn (the prompt's two below the rows). */
type Part = 'header' | 'notice' | 'filters' | 'facets' | 'titles' | 'prompt' | 'promptHelp' | 'promptError' | 'error' | 'message' | 'keyHelp';

/**
 * What gives way, first to last, on a terminal too short for the whole screen: decorations before content. The
 * highlighted row and the prompt line never do; cut at the screen's bottom instead, they were what a 5-row terminal lost.
 */
const GIVE_WAY_LINES: readonly Part[] = ['keyHelp', 'facets', 'promptHelp', 'notice', 'titles', 'message', 'header', 'filters', 'error', 'promptError'];

/** The lines each part takes at the terminal's width (0: not shown): the texts wrap, the facets, titles and key help are cut to one. */
function partLines(props: RunListProps): Record<Part, number> {
  const wrapped = (text: string | null | undefined) => (text ? wrappedLines(text, props.width) : 0);
  const header = `svc runs · ${props.connection.live ? `${liveness(props)} · ` : ''}${props.connection.label}${props.connection.live ? ` · ${updatedText(props)}` : ''}`;
  return {
    header: wrapped(header),
    notice: wrapped(props.connection.notice),
    filters: wrapped(filtersLineOf(props)),
    facets: 1,
    titles: 1,
    prompt: props.prompt ? wrapped(`filter> ${props.prompt.text} `) : 0,
    promptHelp: props.prompt && !props.prompt.error ? wrapped(PROMPT_HELP) : 0,
    promptError: wrapped(props.prompt?.error),
    error: wrapped(props.error && `error: ${props.error}`),
    message: wrapped(props.message),
    keyHelp: 1,
  };
}

/**
 * The parts the screen shows and how many rows: what the lines left by the parts above and below them hold, at least
 * one, the parts giving way (GIVE_WAY_LINES) until it fits. PgUp/PgDn move by these rows, so a page key shows the next
 * screen of rows; the estimate they moved by before (the terminal's rows less a fixed count) was larger where those
 * texts wrap (a narrow or short terminal), and rows were skipped.
 */
export function listLayout(props: RunListProps): { parts: ReadonlySet<Part>; rows: number } {
  const lines = partLines(props);
  const parts = new Set((Object.keys(lines) as Part[]).filter((part) => lines[part] > 0));
  let chrome = [...parts].reduce((sum, part) => sum + lines[part], 0);
  // One row, or the text that stands for none (it wraps).
  const least = props.rows.length === 0 ? wrappedLines(`  ${emptyText(props)}`, props.width) : 1;
  for (const part of GIVE_WAY_LINES) {
    if (chrome + least <= props.lines) break;
    if (parts.delete(part)) chrome -= lines[part];
  }
  return { parts, rows: Math.max(1, Math.min(props.height, props.lines - chrome)) };
}

/** How many rows the list shows at once (see `listLayout`). */
export const rowsPerScreen = (props: RunListProps): number => listLayout(props).rows;

export function RunList(props: RunListProps) {
  const { cursor } = props;
  const { keys, rows, headers, widths, gap } = layout(props.rows, props.width);
  const filtersLine = filtersLineOf(props);
  // The page of rows around the cursor: whole screens, so the view does not jump on every key.
  const { parts, rows: visible } = listLayout(props);
  const top = Math.floor(cursor / visible) * visible;
  const shown = rows.slice(top, top + visible);
  return (
    <Box flexDirection="column">
      {/* One text, not a row of them: on a narrow terminal it wraps as words instead of as columns cut into each other. */}
      {parts.has('header') ? (
        <Text>
          <Text bold>svc runs</Text> · {props.connection.live ? `${liveness(props)} · ` : ''}
          {props.connection.label}
          {props.connection.live ? <Text dimColor> · {updatedText(props)}</Text> : null}
        </Text>
      ) : null}
      {parts.has('notice') ? <Text {...(props.color ? { color: 'yellow' } : {})}>{props.connection.notice}</Text> : null}
      {parts.has('filters') ? <Text>{filtersLine}</Text> : null}
      {parts.has('facets') ? (
        <Text wrap="truncate-end">
          route: {props.facets ? describeFacet(props.facets.route) : '…'} | status: {props.facets ? describeFacet(props.facets.status) : '…'}
        </Text>
      ) : null}
      {parts.has('titles') ? <Text bold wrap="truncate-end">{`  ${line(keys, headers, widths, gap)}`}</Text> : null}
      {rows.length === 0 ? (
        <Text dimColor>{`  ${emptyText(props)}`}</Text>
      ) : (
        shown.map((row, i) => {
          const selected = top + i === cursor;
          return (
            <Text key={row.id} inverse={selected} wrap="truncate-end">
              {`${selected ? '>' : ' '} ${line(keys, row, widths, gap)}`}
            </Text>
          );
        })
      )}
      {props.prompt ? (
        <Text>
          filter&gt; {props.prompt.text}
          <Text inverse> </Text>
        </Text>
      ) : null}
      {parts.has('promptError') || parts.has('promptHelp') ? <Text dimColor>{props.prompt?.error ?? PROMPT_HELP}</Text> : null}
      {parts.has('error') ? <Text {...(props.color ? { color: 'red' } : {})}>error: {props.error}</Text> : null}
      {parts.has('message') ? <Text>{props.message}</Text> : null}
      {parts.has('keyHelp') ? (
        <Text dimColor wrap="truncate-end">
          ↑↓/j k move · PgUp/PgDn · g/G first/last · Enter detail · r/s/m/i cycle route/status/model/ingested · f filter · c clear · n/p older/newer page · q quit
        </Text>
      ) : null}
    </Box>
  );
}
