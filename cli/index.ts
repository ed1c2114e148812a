/**
 * The `svc` executable: commander program wiring one file per command group. Data goes to stdout, diagnostics
 * to stderr; exit codes 0 (ok), 1 (failure), 2 (usage).
 */
import { Command, CommanderError } from 'commander';
import { ConfigError, SVC_VERSION } from '../src/config.ts';
import { SvcApiError } from '../src/client/client.ts';
import { DataDirLockedError } from '../src/store/owner-lock.ts';
import { registerAudit } from './audit.ts';
import { registerCache } from './cache.ts';
import { UsageError } from './connection.ts';
import { registerKeys } from './keys.ts';
import { registerServe } from './serve.ts';
import { registerSettings } from './settings.ts';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('svc')
    .description('svc: self-hosted LLM gateway appliance')
    .version(SVC_VERSION, '-v, --version')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerKeys(program);
  registerSettings(program);
  registerAudit(program);
  registerCache(program);
  // Subcommands share the parent's exit behaviour (usage errors exit 2, not a process.exit inside commander).
  const inherit = (command: Command) => {
    command.exitOverride().showHelpAfterError();
    command.commands.forEach(inherit);
  };
  program.commands.forEach(inherit);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version exit 0; parse errors are usage errors.
      process.exit(error.exitCode === 0 ? 0 : 2);
    }
    if (error instanceof UsageError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof SvcApiError) {
      process.stderr.write(`svc: ${error.message} (${error.code}, HTTP ${error.status})\n`);
      process.exit(1);
    }
    if (error instanceof DataDirLockedError) {
      process.stderr.write(`svc: ${error.message} without a local socket; stop it or use --url\n`);
      process.exit(1);
    }
    if ((error as Error).name === 'ExitPromptError') {
      process.stderr.write('Cancelled.\n');
      process.exit(1);
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`svc: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

await main(process.argv);
