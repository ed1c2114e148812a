/**
 * The `svc` commander program: one file per command group registers its commands (cli/index.ts lists them all; the
 * `svc serve` entry, cli/serve-entry.ts, only its own). Data goes to stdout, diagnostics to stderr; exit codes 0 (ok),
 * 1 (failure), 2 (usage).
 */
import { note } from './output.ts';
import { dropEmptyNoColor } from './terminal-color.ts';
import { terminalText } from './terminal-text.ts';
import { Command, CommanderError } from 'commander';
import { ConfigError, SVC_VERSION } from '../src/config.ts';
import { inheritConnectionOptions, UsageError, withConnectionOptions } from './connection.ts';
import { refuseOwnFlagsAsValues, typedWithEquals } from './options.ts';
import { refuseExcessArgumentsBeforeHelp, strictHelp } from './help.ts';
import { currentRun, inRun, type CliStreams } from './run-context.ts';

const HELP_AFTER = `
Admin commands (keys, users, orgs, settings, audit, cache, runs) reach svc, in this order of choice:
  --url / SVC_BASE_URL       plain HTTP(S), with --api-key / SVC_API_KEY as the bearer token
  a running svc serve        its local socket in the data directory (you act as the local operator)
  otherwise                  the data directory in-process, holding its lock for the command's duration
The data directory is --data-dir, else SVC_DATA_DIR, else ~/.svc.
--url, --api-key, --data-dir and --json go before the command, between a group and its command or after it
(svc --url URL keys list, svc keys --url URL list); given in more than one place, the later one wins. svc serve takes
--data-dir alone.

Output: tables on stdout, --json for scripts; messages on stderr.
Exit codes: 0 success, 1 failure (API error, unreachable server), 2 usage error.

Examples:
  svc keys create --name ci --admin
  svc keys list --json
  svc users create --email ada@example.com --name Ada
  svc orgs invite --email bob@example.com --org org_...
  svc settings set retention_days 30
  svc audit --limit 20 --verify
  svc runs --status failed --since 2h
  svc serve --port 8787

Run "svc <command> --help" for a command's flags; docs/cli.md has the full reference.`;

/** Adds one command group's commands to the program. */
export type RegisterCommands = (program: Command) => void;

/** A program of its own for each run (commander keeps what it parsed in the program): `argv` is the line it will parse. */
export function buildProgram(groups: readonly RegisterCommands[], argv: readonly string[]): Command {
  const program = new Command();
  program
    .name('svc')
    // Help, --version and usage errors go to the run's streams (commander's default is the process's); shared by
    // every command added after this. A usage error quotes the command line (`unknown option '...'`), where a pasted
    // argument may hold terminal control sequences (a window title, OSC 52's clipboard write): shown escaped, as
    // everything else svc writes to a terminal (terminal-text.ts).
    .configureOutput({ writeOut: (text) => currentRun().stdout.write(text), writeErr: (text) => currentRun().stderr.write(terminalText(text)) })
    .description('svc: self-hosted LLM gateway appliance')
    .version(SVC_VERSION, '-v, --version')
    .showHelpAfterError()
    .exitOverride()
    // The root's options (-v, --version) only before the command: by default commander reads them anywhere on the
    // line, so `svc keys create --name -v` printed the version and exited 0, creating nothing. Inherited by every
    // command added after this.
    .enablePositionalOptions()
    .addHelpText('after', HELP_AFTER);
  withConnectionOptions(program).hook('preAction', inheritConnectionOptions);
  for (const register of groups) register(program);
  // A group (svc keys, svc users ...) takes them too, between it and its command (svc keys --url URL list).
  for (const group of program.commands) if (group.commands.length > 0) withConnectionOptions(group);
  for (const group of [program, ...program.commands]) {
    if (group.commands.length === 0) continue;
    // Taken after `help` too and ignored, as after --help (`svc keys --help --json`): the line says where the help is
    // asked for, not what it shows. Its own help does not list them, which do nothing there.
    for (const option of withConnectionOptions(strictHelp(group)).options) option.hideHelp();
  }
  // Which values the line gives with `=`.
  const typedAsValue = typedWithEquals(argv);
  // Subcommands share the parent's exit behaviour (usage errors exit 2, not a process.exit inside commander).
  const inherit = (command: Command) => {
    command.exitOverride().showHelpAfterError();
    refuseOwnFlagsAsValues(command, typedAsValue);
    if (command.commands.length === 0) refuseExcessArgumentsBeforeHelp(command);
    command.commands.forEach(inherit);
  };
  program.commands.forEach(inherit);
  refuseOwnFlagsAsValues(program, typedAsValue);
  return program;
}

/**
 * A reader that stops early (`svc audit --json | head`) closes the pipe, and node, which ignores SIGPIPE, fails the
 * next write with EPIPE: an unhandled error event, a stack trace and exit code 1. The rest of the output has nowhere
 * to go, which is no failure of the command: it goes on (an in-process one closes the data file as usual) unprinted.
 */
function ignoreClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

/**
 * stderr carries diagnostics only, and a stderr that fails (a file on a full disk: ENOSPC) has nowhere left to say
 * so: its error is dropped too, whatever it is. Thrown, it ended `svc serve` at its next note (a commit's lost writes
 * on that same full disk, the steps of a SIGTERM's clean stop), the gateway with it.
 */
function ignoreFailingStderr(): void {
  process.stderr.on('error', () => undefined);
}

/**
 * bin/svc's run of the program on the process's command line: a failure ends the process at once with its code, as
 * anything still open (a cancelled prompt's stdin) would keep it; a command that completed leaves the process to end
 * when nothing is left to do, with the exit code it set.
 */
export async function main(groups: readonly RegisterCommands[]): Promise<void> {
  dropEmptyNoColor(process.env);
  ignoreClosedPipe(process.stdout);
  ignoreFailingStderr();
  const failed = await runProgram(buildProgram(groups, process.argv), process.argv, 'node');
  if (failed !== null) process.exit(failed);
}

/**
 * One run of the program inside this process, on `args` (the words after `svc`) with streams and an environment of
 * its own (`env` is the run's to change): the code it exits with. For the tests of a command's output and exit code;
 * what belongs to a process (signals, a terminal, the prompts, svc serve) is bin/svc's alone.
 */
export async function runCli(groups: readonly RegisterCommands[], args: readonly string[], streams: CliStreams): Promise<number> {
  dropEmptyNoColor(streams.env);
  return inRun(streams, async (run) => (await runProgram(buildProgram(groups, args), args, 'user')) ?? run.exitCode ?? 0);
}

/** Parses `argv` and runs its command, settling every error: its exit code, or null when the command completed. */
async function runProgram(program: Command, argv: readonly string[], from: 'node' | 'user'): Promise<number | null> {
  try {
    await program.parseAsync(argv, { from });
    return null;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version exit 0; parse errors are usage errors.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof UsageError) {
      note(`svc: ${error.message}\n`);
      return 2;
    }
    if ((error as Error).name === 'ExitPromptError') {
      note('Cancelled.\n');
      return 1;
    }
    if (error instanceof ConfigError) {
      note(`svc: ${error.message}\n`);
      return 2;
    }
    // An SvcApiError's message names the call, its status and code (GET /api/v1/keys: HTTP 404 not_found: ...).
    note(`svc: ${(error as Error).message}\n`);
    return 1;
  }
}
