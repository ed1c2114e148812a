/** `svc cache stats|invalidate` (SPEC 4.11). */
import { InvalidArgumentError, type Command } from 'commander';
import { CACHE_TYPES, KEY_PREFIX_RULE, keyPrefixHolds } from '../src/caches/service.ts';
import { confirmOrExit } from './confirm.ts';
import { UsageError, withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { oneOf, parseNonEmpty } from './options.ts';
import { note, print, printJson, table } from './output.ts';
import { currentRun } from './run-context.ts';

export function registerCache(program: Command): void {
  const cache = program.command('cache').description('response caches: statistics and invalidation');

  withConnectionOptions(cache.command('stats'))
    .description('entries and hits per cache tier')
    .action(async (options: ConnectionOptions) => {
      const result = await withClient(options, (client) => client.cache.stats());
      if (options.json) return printJson(result);
      print(table(result.stats, { cacheType: 'TIER', entries: 'ENTRIES', hits: 'HITS' }));
    });

  withConnectionOptions(cache.command('invalidate'))
    .description('delete cache entries: one tier (--type), a key prefix within it (--prefix), or everything (--all)')
    .option('--type <cacheType>', `tier: ${CACHE_TYPES.join(', ')}`, oneOf(CACHE_TYPES))
    .option('--prefix <keyPrefix>', 'only keys starting with this (needs --type)', parseKeyPrefix)
    .option('--all', 'every tier of the tenant')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (options: ConnectionOptions & { type?: string; prefix?: string; all?: boolean; yes?: boolean }) => {
      if (!options.all && !options.type) throw new UsageError('say what to invalidate: --type <tier> [--prefix <p>] or --all');
      if (options.all && (options.type || options.prefix !== undefined)) throw new UsageError('--all clears every tier; it cannot be combined with --type or --prefix');
      const what = options.all ? 'every cache tier' : `${options.type}${options.prefix ? ` entries starting with "${options.prefix}"` : ''}`;
      if (!(await confirmOrExit(`Invalidate ${what}?`, options.yes))) {
        note('Cancelled.\n');
        currentRun().exitCode = 1;
        return;
      }
      const result = await withClient(options, (client) =>
        client.cache.invalidate({
          ...(options.all ? { all: true } : {}),
          ...(options.type ? { cacheType: options.type } : {}),
          ...(options.prefix !== undefined ? { keyPrefix: options.prefix } : {}),
        }),
      );
      if (options.json) return printJson(result);
      print(`invalidated ${result.invalidated} entr${result.invalidated === 1 ? 'y' : 'ies'}`);
    });
}

/** The server's key-prefix rule as a usage error, before the confirmation is asked and any request made. */
function parseKeyPrefix(value: string): string {
  if (!keyPrefixHolds(parseNonEmpty(value))) throw new InvalidArgumentError(`must be ${KEY_PREFIX_RULE}`);
  return value;
}
