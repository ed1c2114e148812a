/** `svc audit`: the tenant's audit log, newest first, optionally with a chain verification. */
import { InvalidArgumentError, type Command } from 'commander';
import { withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { note, print, printJson, table } from './output.ts';
import { limitParser, parsePositiveInt } from './options.ts';
import { currentRun } from './run-context.ts';

export function registerAudit(program: Command): void {
  withConnectionOptions(program.command('audit'))
    .description('show the audit log (newest first)')
    .option('--limit <n>', 'how many events (1-500, default 50)', limitParser(500))
    .option('--before <seq>', 'only events older than this seq (the one a page that has more names)', parsePositiveInt)
    .option('--decision <decision>', 'only allow or deny events', (value) => {
      if (value !== 'allow' && value !== 'deny') throw new InvalidArgumentError('must be allow or deny');
      return value;
    })
    .option('--verify', "recompute the tenant's hash chain")
    .action(async (options: ConnectionOptions & { limit?: number; before?: number; decision?: 'allow' | 'deny'; verify?: boolean }) => {
      const result = await withClient(options, (client) =>
        client.audit.list({
          ...(options.limit ? { limit: options.limit } : {}),
          ...(options.before !== undefined ? { before: options.before } : {}),
          ...(options.decision ? { decision: options.decision } : {}),
          ...(options.verify ? { verify: true } : {}),
        }),
      );
      // A broken chain is a failure whatever the format: a script checking `svc audit --verify --json` reads the code.
      if (result.integrity && !result.integrity.ok) currentRun().exitCode = 1;
      if (options.json) return printJson(result);
      const rows = result.events.map((event) => ({ ...event, actor: Object.entries(event.actor).map(([k, v]) => `${k}=${v}`).join(' ') }));
      print(table(rows, { seq: 'SEQ', createdAt: 'TIME', action: 'ACTION', decision: 'DECISION', actor: 'ACTOR', target: 'TARGET' }, 'No audit events.'));
      if (result.window?.hasMore && result.window.nextBefore !== null) note(`older events: --before ${result.window.nextBefore}`);
      if (result.integrity) {
        const { ok, count, brokenAt } = result.integrity;
        print(ok ? `chain intact${count === null ? '' : ` (${count} events)`}` : `CHAIN BROKEN at seq ${brokenAt}`);
      }
    });
}
