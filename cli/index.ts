/**
 * The `svc` executable: commander program wiring one file per command group. Data goes to stdout, diagnostics
 * to stderr; exit codes 0 (ok), 1 (failure), 2 (usage).
 */
import { Command, CommanderError } from 'commander';
import { ConfigError, SVC_VERSION } from '../src/config.ts';
import { registerServe } from './serve.ts';

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('svc')
    .description('svc: self-hosted LLM gateway appliance')
    .version(SVC_VERSION, '-v, --version')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
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
    if (error instanceof ConfigError) {
      process.stderr.write(`svc: ${error.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`svc: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

await main(process.argv);
