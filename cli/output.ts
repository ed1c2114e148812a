/**
 * Human tables and `--json` output for admin commands: data on stdout, diagnostics on stderr. Everything printed
 * through here is made safe for a terminal (terminal-text.ts): it carries text from the server.
 */
import { terminalJson, terminalLine, terminalText } from './terminal-text.ts';
import { columnsOf, padEndColumns } from './terminal-width.ts';
import { currentRun } from './run-context.ts';

export type Cell = string | number | boolean | null | undefined;

/** A plain aligned table; columns are the keys of `columns`, headers its values. */
export function table<T extends object>(rows: readonly T[], columns: Record<string, string>, empty = "(none)"): string {
  if (rows.length === 0) return `${empty}\n`;
  const keys = Object.keys(columns);
  const text = (value: unknown) => terminalLine(value === null || value === undefined ? '-' : typeof value === 'object' ? JSON.stringify(value) : String(value));
  const body = rows.map((row) => keys.map((key) => text((row as Record<string, unknown>)[key])));
  const headers = keys.map((key) => columns[key]!);
  // Terminal columns, not string lengths: a CJK name or an emoji takes two columns (terminal-width.ts).
  const widths = keys.map((_, i) => Math.max(columnsOf(headers[i]!), ...body.map((cells) => columnsOf(cells[i]!))));
  const line = (cells: string[]) => cells.map((cell, i) => padEndColumns(cell, widths[i]!)).join('  ').trimEnd();
  return [line(headers), ...body.map(line)].join('\n') + '\n';
}

export function printJson(value: unknown): void {
  currentRun().stdout.write(`${terminalJson(value)}\n`);
}

export function print(text: string): void {
  const safe = terminalText(text);
  currentRun().stdout.write(safe.endsWith('\n') ? safe : `${safe}\n`);
}

/** A diagnostic line on stderr (a warning, a note, an error); it may carry text from the server. */
export function note(text: string): void {
  const safe = terminalText(text);
  currentRun().stderr.write(safe.endsWith('\n') ? safe : `${safe}\n`);
}
