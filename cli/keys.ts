/** `svc keys create|list|revoke|mode` (SPEC 2.2, 4.6). */
import { InvalidArgumentError, type Command } from 'commander';
import { confirmOrExit } from './confirm.ts';
import { withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { note, print, printJson, table } from './output.ts';
import { idParser, limitParser, parseNonEmpty, parseNonNegativeInt } from './options.ts';
import { currentRun } from './run-context.ts';

const KEY_COLUMNS = { id: 'ID', name: 'NAME', mode: 'MODE', appId: 'APP', admin: 'ADMIN', status: 'STATUS', createdAt: 'CREATED' };

function parseMode(value: string): 'observe' | 'optimize' {
  if (value !== 'observe' && value !== 'optimize') throw new InvalidArgumentError('must be observe or optimize');
  return value;
}

const parseKeyId = idParser('key', 'a key');

export function registerKeys(program: Command): void {
  const keys = program
    .command('keys')
    .description('manage API keys (tokens are shown once, at creation)')
    .addHelpText(
      'after',
      `
Examples:
  svc keys create --name ci --admin          an admin key; the token is printed once
  svc keys create --name web --app shop --mode observe
  svc keys list --json
  svc keys mode key_... observe
  svc keys revoke key_... --yes`,
    );

  withConnectionOptions(keys.command('create'))
    .description('create an API key and print its token once')
    .requiredOption('-n, --name <name>', 'a label for the key', parseNonEmpty)
    .option('--admin', 'the key may manage keys, settings and other admin actions')
    .option('--app <appId>', 'pin the key to an app (its traffic and reads are scoped to that app)', parseNonEmpty)
    .option('--mode <mode>', 'observe or optimize (default optimize)', parseMode)
    .action(async (options: ConnectionOptions & { name: string; admin?: boolean; app?: string; mode?: 'observe' | 'optimize' }) => {
      const created = await withClient(options, (client) =>
        client.keys.create({
          name: options.name,
          ...(options.admin ? { admin: true } : {}),
          ...(options.app ? { appId: options.app } : {}),
          ...(options.mode ? { mode: options.mode } : {}),
        }),
      );
      // The warning goes to stderr either way, so `--json` output stays pure JSON.
      note('warning: store this token now; svc keeps only its hash and will not show it again.\n');
      if (options.json) return printJson(created);
      print(table([created.key], KEY_COLUMNS));
      print(`\ntoken: ${created.token}`);
    });

  withConnectionOptions(keys.command('list'))
    .description('list API keys (never their tokens)')
    .option('--limit <n>', 'page size (1-200, default 50)', limitParser(200))
    .option('--offset <n>', 'skip this many keys', parseNonNegativeInt)
    .action(async (options: ConnectionOptions & { limit?: number; offset?: number }) => {
      const page = await withClient(options, (client) =>
        client.keys.list({ ...(options.limit ? { limit: options.limit } : {}), ...(options.offset ? { offset: options.offset } : {}) }),
      );
      if (options.json) return printJson(page);
      print(table(page.keys, KEY_COLUMNS, 'No API keys.'));
      const { offset, total, hasMore } = page.pagination;
      if (hasMore) note(`showing ${offset + 1}-${offset + page.keys.length} of ${total}; next page: --offset ${offset + page.keys.length}\n`);
    });

  withConnectionOptions(keys.command('mode'))
    .description('switch a key between observe and optimize without rotating it (audited)')
    .argument('<id>', 'key id (key_...)', parseKeyId)
    .argument('<mode>', 'observe or optimize', parseMode)
    .action(async (id: string, mode: 'observe' | 'optimize', options: ConnectionOptions) => {
      const result = await withClient(options, (client) => client.keys.setMode(id, mode));
      if (options.json) return printJson(result);
      print(table([result.key], KEY_COLUMNS));
    });

  withConnectionOptions(keys.command('revoke'))
    .description('revoke a key; it is rejected from the very next request')
    .argument('<id>', 'key id (key_...)', parseKeyId)
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (id: string, options: ConnectionOptions & { yes?: boolean }) => {
      if (!(await confirmOrExit(`Revoke API key ${id}?`, options.yes))) {
        note('Cancelled.\n');
        currentRun().exitCode = 1;
        return;
      }
      const result = await withClient(options, (client) => client.keys.revoke(id));
      if (options.json) return printJson(result);
      print(table([result.key], KEY_COLUMNS));
    });
}
