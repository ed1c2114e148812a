/**
 * `svc runs`: browse the run ledger. On a terminal it opens the full-screen TUI (cli/tui/), live against a running
 * `svc serve` and a still view of the data directory in-process otherwise; with `--no-tui`, `--json` or when
 * stdout or stdin is not a terminal it prints the filtered list once, as a table or JSON, and exits.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../src/config.ts';
import { RUN_ROUTES, RUN_STATUSES } from '../src/evidence/types.ts';
import { connectWithKind, UsageError, withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { idParser, limitParser, oneOf, parseNonEmpty, parseNonNegativeInt } from './options.ts';
import { note, print, printJson, table } from './output.ts';
import { resolveSince, RUN_COLUMNS, toRunQuery, toRunRow, type RunFilterInput } from './tui/format.ts';
import { runListPageOf, type RunListPage } from './tui/run-answers.ts';
import { currentRun } from './run-context.ts';

/** The API's page size bounds for the runs list. */
const MAX_LIMIT = 200;
const DEFAULT_LIMIT = 50;

interface RunsOptions extends ConnectionOptions {
  route?: string;
  status?: string;
  model?: string;
  since?: string;
  ingested?: boolean;
  limit?: number;
  offset?: number;
  before?: string;
  tui: boolean;
  outDir?: string;
}

function parseSince(value: string): string {
  if (resolveSince(value) === null) throw new InvalidArgumentError('must be an ISO 8601 time, epoch milliseconds or a duration such as 30m, 2h, 7d');
  return value;
}

/**
 * Where the table's page stands and how to read the next one. Below a cursor the API counts `offset` from it, so the
 * page is placed after its cursor; an `--offset` page is a position in the list as it is now, which runs recorded
 * meanwhile shift (docs/gateway.md "Walking the runs list"), so `--before` is named beside it.
 */
function nextPageNote(pagination: RunListPage['pagination'], shown: number, before: string | undefined): string {
  const { offset, total, nextBefore } = pagination;
  const range = `${offset + 1}-${offset + shown}`;
  const cursor = nextBefore === null ? '' : `--before ${nextBefore}`;
  if (before === undefined) return `showing ${range} of ${total}; next page: --offset ${offset + shown}${cursor && ` or ${cursor}`}`;
  return `showing ${range} after ${before} (${total} in all); next page: ${cursor || `--before ${before} --offset ${offset + shown}`}`;
}

export function registerRuns(program: Command): void {
  withConnectionOptions(program.command('runs'))
    .description('browse runs: a live full-screen view on a terminal, a plain table otherwise')
    .option('--route <route>', `only runs served by this route (${RUN_ROUTES.join(', ')})`, oneOf(RUN_ROUTES))
    .option('--status <status>', `only runs in this status (${RUN_STATUSES.join(', ')})`, oneOf(RUN_STATUSES))
    .option('--model <model>', 'only runs for this model', parseNonEmpty)
    .option('--since <time>', 'only runs created since an ISO time, epoch ms or a duration back from now (30m, 2h, 7d)', parseSince)
    .option('--ingested', 'only SDK-ingested prompts (recorded on the live route, handled outside svc)')
    .option('--no-ingested', 'leave SDK-ingested prompts out: the traffic svc served')
    .option('--limit <n>', `runs per page (1-${MAX_LIMIT}, default ${DEFAULT_LIMIT})`, limitParser(MAX_LIMIT))
    .option('--offset <n>', 'skip this many runs (plain table)', parseNonNegativeInt)
    .option('--before <runId>', 'list the runs after this one: the cursor stderr names for the next page, stable while runs are recorded (plain table)', idParser('run', 'a run'))
    .option('--no-tui', 'print the list once as a table (also when stdout is not a terminal)')
    .option('--out-dir <dir>', 'where the TUI writes evidence-<runId>.json (default: the current directory)', parseNonEmpty)
    .addHelpText(
      'after',
      `
On a terminal, svc runs opens a full-screen view. Against a running svc serve (its local socket, or --url) the list
updates every second; with no server it reads the data directory in-process, holding it (svc serve cannot start on
it meanwhile), and does not update live.

Keys, list:   up/down or k/j move, PgUp/PgDn a screen, g/G first/last, Enter opens a run,
              r/s/m/i cycle the route/status/model/ingested filter, f edits the filters (route=live since=1h),
              c clears them, n/p older/newer page, q, Esc or Ctrl-C quits.
Keys, detail: n or ] older trace events, p or [ newer ones, e exports the evidence packet to
              evidence-<runId>.json, q or Esc goes back.

Examples:
  svc runs                                    the full-screen view
  svc runs --status failed --since 2h         only failed runs of the last two hours
  svc runs --no-tui --route exact_cache       a plain table of cache hits
  svc runs --no-tui --route live --no-ingested  live traffic svc served, without SDK-ingested prompts
  svc runs --json --limit 200 > runs.json
  svc runs --no-tui --before run_...          the next page, from the cursor the page before named`,
    )
    .action(async (options: RunsOptions) => {
      const filters: RunFilterInput = {
        route: options.route,
        status: options.status,
        model: options.model,
        since: options.since,
        ingested: options.ingested === undefined ? undefined : String(options.ingested),
      };
      const limit = options.limit ?? DEFAULT_LIMIT;
      const outDir = resolve(options.outDir ?? '.');
      if (options.outDir !== undefined && !(existsSync(outDir) && statSync(outDir).isDirectory())) {
        throw new UsageError(`--out-dir ${options.outDir} is not a directory`);
      }
      const { stdout, stdin, env } = currentRun();
      const tui = options.tui && !options.json && stdout.isTTY === true && stdin.isTTY === true;
      if (!tui) {
        const query = toRunQuery(filters, { limit, offset: options.offset ?? 0, before: options.before });
        const answer = await withClient(options, (client) => client.runs.list(query));
        // The API's answer as it is: its pagination.nextBefore is the --before of the next page.
        if (options.json) return printJson(answer);
        const page = runListPageOf(answer);
        print(table(page.runs.map(toRunRow), RUN_COLUMNS, 'No runs.'));
        if (page.pagination.hasMore) note(`${nextPageNote(page.pagination, page.runs.length, options.before)}\n`);
        return;
      }
      const { client, kind, token } = await connectWithKind(options);
      try {
        const where =
          kind === 'http'
            ? (options.url ?? env.SVC_BASE_URL ?? '')
            : loadConfig(env, options.dataDir !== undefined ? { dataDir: options.dataDir } : {}).dataDir ?? '';
        // Loaded only here: Ink, React and Yoga stay out of every other command's start-up.
        const [{ startRunsTui }, { withTokenHint }] = await Promise.all([import('./tui/start-tui.tsx'), import('./token-hint.ts')]);
        // A refused token's 401 names it on the error line, as every other command's message does.
        const explainError = (error: unknown) => (token === null ? error : withTokenHint(error, token));
        await startRunsTui({ client, kind, where, filters, limit, outDir, explainError });
      } finally {
        await client.close();
      }
    });
}
