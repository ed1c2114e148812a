/**
 * `svc audit`: the tenant's audit log, newest first, optionally with a chain verification. `--org <id>` reads another
 * organization's (the `X-Svc-Tenant` header, as `svc orgs --org`), a deleted one's too (docs/accounts.md "Deletion").
 */
import { InvalidArgumentError, type Command } from 'commander';
import { withClient, withConnectionOptions, type ConnectionOptions } from './connection.ts';
import { note, print, printJson, table } from './output.ts';
import { limitParser, parseNonEmpty, parsePositiveInt } from './options.ts';
import { currentRun } from './run-context.ts';
import { inOrg } from './users.ts';

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
    .option('--org <id>', 'the organization (org_...), also a deleted one; default: your active one (the default organization for the local operator)', parseNonEmpty)
    .addHelpText(
      'after',
      `
--org <id> reads another organization's log (sent as the X-Svc-Tenant header): for the local operator (a running
svc serve's socket, or in-process) and the bootstrap token over --url, as svc orgs --org. A deleted organization's
log is kept, org.delete its newest event, and read (and verified with --verify) the same way; an id that was never
an organization is an error (HTTP 404 not_found). Other identities read their own organization's log only.

Examples:
  svc audit --limit 20
  svc audit --decision deny
  svc audit --org org_... --verify`,
    )
    .action(async (options: ConnectionOptions & { limit?: number; before?: number; decision?: 'allow' | 'deny'; verify?: boolean; org?: string }) => {
      const result = await withClient(options, (client) =>
        inOrg(client, options.org).audit.list({
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
