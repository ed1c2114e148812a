/**
 * How `svc runs` writes a run, its filters and its evidence as text: shared by the plain table (`--no-tui`, or stdout
 * not a terminal) and the Ink screens, so both show the same columns and the same numbers.
 */
import type { RunFilters, RunRoute, RunStatus, RunSummary } from '../../src/client/client.ts';
import { instantMs, INSTANT_MIN_MS } from '../../src/core/instant-form.ts';
import { clipColumns, clipColumnsStart } from '../terminal-width.ts';
import { textOf } from './run-answers.ts';

/** The run list's columns, in order: key of `RunRow` -> header of the plain table. */
export const RUN_COLUMNS = {
  route: 'ROUTE',
  status: 'STATUS',
  model: 'MODEL',
  cost: 'COST_USD',
  latency: 'LATENCY_MS',
  savings: 'SAVINGS_USD',
  created: 'CREATED',
  id: 'ID',
} as const;

export type RunRow = Record<keyof typeof RUN_COLUMNS, string>;

/**
 * USD as the API gives it: below a dollar every digit down to svc's resolution, 1e-10 (an attempt's cost is rounded
 * there, src/gateway/pricing.ts), since a mini-model call costs millionths of a dollar; six decimals showed one of
 * $0.00000015 as `0.` and $0.0000015 as 0.000002. From a dollar up, to the cent. `-` for what is no amount (a server
 * named by --url is not necessarily svc: its answer's fields may have other types).
 */
export function formatUsd(usd: number | null): string {
  if (typeof usd !== 'number' || !Number.isFinite(usd)) return '-';
  if (usd === 0) return '0';
  return usd >= 1 ? usd.toFixed(2) : usd.toFixed(10).replace(/\.?0+$/, '');
}

/** An ISO timestamp as `YYYY-MM-DD HH:MM:SS` (UTC, as the API gives it). */
export function formatTime(iso: string | null): string {
  if (typeof iso !== 'string' || iso === '') return '-';
  return iso.replace('T', ' ').replace(/\.\d+/, '').replace(/Z$/, '');
}

/** The time of day of an ISO timestamp with milliseconds (`HH:MM:SS.mmm`), for a trace timeline. */
export function formatClock(iso: string): string {
  return /T(\d\d:\d\d:\d\d(?:\.\d+)?)/.exec(iso)?.[1] ?? iso;
}

/**
 * A field shown as text: `-` for none; a number or boolean written out (a server that is not svc may send one); cut
 * at MAX_FIELD_CHARS, as the detail screen's fields are.
 */
function cellOf(value: unknown): string {
  const text = textOf(value);
  return text === null || text === '' ? '-' : text;
}

/**
 * One run as the list shows it: unpriced cost as `n/a`; savings that observe mode only estimated as `~ghost`. Every
 * cell is text whatever the answer held: a `--url` server's `"model": null` or `"costUsd": "x"` ended `svc runs`.
 */
export function toRunRow(run: RunSummary): RunRow {
  const ghost = typeof run.ghostSavedUsd === 'number' && run.ghostSavedUsd > 0 && !(typeof run.savedUsd === 'number' && run.savedUsd > 0);
  return {
    // An SDK-ingested prompt is recorded on the live route though svc served nothing: said beside its route.
    route: run.ingested === true ? `${cellOf(run.route)}/ingested` : cellOf(run.route),
    status: cellOf(run.status),
    model: cellOf(run.model),
    cost: run.priced === false ? 'n/a' : formatUsd(run.costUsd),
    latency: typeof run.latencyMs === 'number' && Number.isFinite(run.latencyMs) ? String(run.latencyMs) : '-',
    savings: ghost ? `~${formatUsd(run.ghostSavedUsd)}` : formatUsd(run.savedUsd),
    created: formatTime(textOf(run.createdAt)),
    id: cellOf(run.id),
  };
}

/** The list filters as the user gives them; `since` stays as typed (`1h` slides with each refresh). */
export interface RunFilterInput {
  route?: string | undefined;
  status?: string | undefined;
  model?: string | undefined;
  since?: string | undefined;
  /** `true`: only SDK-ingested prompts; `false`: every run but them. */
  ingested?: string | undefined;
}

export const FILTER_KEYS = ['route', 'status', 'model', 'since', 'ingested'] as const;
export type FilterKey = (typeof FILTER_KEYS)[number];

/** The values of the `ingested` filter (`--ingested`/`--no-ingested`); not having it is all runs. */
export const INGESTED_VALUES: readonly string[] = ['true', 'false'];

const DURATION_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `--since` and the `since=` filter: an ISO 8601 timestamp, epoch milliseconds, or a duration back from `now`
 * (`30s`, `15m`, `2h`, `7d`, `1w`). Returns epoch milliseconds, or null when the text is none of these or lands
 * outside the years the API takes. Timestamps are read as the API reads them (src/core/instant-form.ts), not by
 * `Date.parse`, which took `1.5` for a day of 2001 and `2026-02-30` for March 2.
 */
export function resolveSince(text: string, now = Date.now()): number | null {
  const value = text.trim();
  const duration = /^(\d+)\s*([smhdw])$/i.exec(value);
  if (!duration) return instantMs(value);
  const ms = now - Number(duration[1]) * DURATION_MS[duration[2]!.toLowerCase()]!;
  return ms >= INSTANT_MIN_MS ? ms : null;
}

/** The API query of a filter input (since resolved against `now`). */
export function toRunQuery(filters: RunFilterInput, page: { limit: number; offset: number; before?: string | undefined }, now = Date.now()): RunFilters {
  const since = filters.since ? resolveSince(filters.since, now) : null;
  return {
    limit: page.limit,
    offset: page.offset,
    ...(page.before !== undefined ? { before: page.before } : {}),
    // As typed: svc answers a route or status it does not have with a 400 naming it, which the TUI shows.
    ...(filters.route ? { route: filters.route as RunRoute } : {}),
    ...(filters.status ? { status: filters.status as RunStatus } : {}),
    ...(filters.model ? { model: filters.model } : {}),
    ...(since !== null ? { since } : {}),
    ...(filters.ingested === 'true' || filters.ingested === 'false' ? { ingested: filters.ingested === 'true' } : {}),
  };
}

/** `route=live status=all ...`: the filter header, also the text the filter prompt starts from. */
export function describeFilters(filters: RunFilterInput, all = 'all'): string {
  return FILTER_KEYS.map((key) => `${key}=${filters[key] || all}`).join(' ');
}

/** The active filters as prompt text (`route=live since=1h `), ready to be edited. */
export function filterText(filters: RunFilterInput): string {
  return FILTER_KEYS.filter((key) => filters[key]).map((key) => `${key}=${filters[key]} `).join('');
}

/**
 * Parse the filter prompt: `key=value` words (`all`, `*` or an empty value clears a key); keys are route, status,
 * model, since, ingested. Returns the new filters or an error message.
 */
export function parseFilterText(text: string): { filters: RunFilterInput } | { error: string } {
  const filters: RunFilterInput = {};
  for (const word of text.trim().split(/\s+/).filter(Boolean)) {
    const match = /^([a-z]+)=(.*)$/.exec(word);
    if (!match || !(FILTER_KEYS as readonly string[]).includes(match[1]!)) {
      return { error: `"${word}": use key=value with key route, status, model, since or ingested` };
    }
    const key = match[1] as FilterKey;
    const value = match[2]!;
    if (value === '' || value === 'all' || value === '*') continue;
    if (key === 'since' && resolveSince(value) === null) return { error: `since=${value}: give an ISO time, epoch ms or a duration like 15m, 2h, 7d` };
    if (key === 'ingested' && !INGESTED_VALUES.includes(value)) return { error: `ingested=${value}: give true (only ingested prompts) or false` };
    filters[key] = value;
  }
  return { filters };
}

/** Facet counts as `live 12 · exact_cache 3`, largest first. */
export function describeFacet(counts: Record<string, number>): string {
  const entries = Object.entries(counts).filter(([, n]) => n > 0);
  if (entries.length === 0) return '-';
  return entries
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([value, n]) => `${value} ${n}`)
    .join(' · ');
}

/** A value cut to `width` terminal columns with an ellipsis. */
export const clip = clipColumns;

/** A value cut to its last `width` terminal columns, with an ellipsis in front. */
export const clipStart = clipColumnsStart;

/** One line for a trace event's payload: its JSON without braces noise, for the timeline. */
export function summarizePayload(payload: Record<string, unknown>): string {
  const parts = Object.entries(payload).map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return parts.join(' ');
}
