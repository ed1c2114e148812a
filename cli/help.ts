/**
 * Help that names only commands svc has. Commander's own let a mistyped name pass as help: its `help` command read
 * only its first operand (`svc help keys nosuch` printed the keys help, exit 0; `svc help keys create` too) and
 * answered an unknown one with the program's help and no word of why (exit 2), and `--help` was honoured before the
 * command it followed was looked up (`svc nosuch --help`: the program's help, exit 0). Each is now the unknown command
 * error `svc nosuch` gives (exit 2, on stderr). So too `--help` after more arguments than a command takes (`svc serve
 * nosuch --help`) is the error the same line without it gives.
 */
import type { Command } from 'commander';

const helpCommands = new WeakSet<Command>();

/** Whether `command` is one of the `help` commands strictHelp adds (it acts on nothing, so needs no connection). */
export function isHelpCommand(command: Command): boolean {
  return helpCommands.has(command);
}

/** The command of `group` called `name` (or aliased so). */
function commandNamed(group: Command, name: string): Command | undefined {
  return group.commands.find((command) => command.name() === name || command.aliases().includes(name));
}

/**
 * The usage error commander gives `svc <group> <name>` for a name `group` has no command of, its "Did you mean"
 * suggestion included. Commander makes it in its unknownCommand, which is no public API, so `group` is parsed again
 * with the name alone (after `--`: a name starting with `-` is a name too), which commander answers with it: a group
 * has no action to run instead, and a name it has no command of is dispatched to none. A command without commands of
 * its own has no name to suggest, and parsing it would run it: its error is commander's words without a suggestion.
 */
function unknownCommand(group: Command, name: string): never {
  if (group.commands.length > 0) group.parse(['--', name], { from: 'user' });
  group.error(`error: unknown command '${name}'`, { code: 'commander.unknownCommand' });
}

/**
 * Makes `group` (the program, or a command with commands of its own) strict about help: `help [command...]` walks
 * the names it is given down the commands (`svc help keys create` is `svc keys create --help`), and `--help` after a
 * name that is no command of the group is that name's unknown command error. Run it after the group's commands are
 * all added. Returns the `help` command.
 */
export function strictHelp(group: Command): Command {
  const help = group
    .command('help')
    .description('display help for command')
    .argument('[command...]', 'the command, and its command, to show the help of')
    .action((names: string[]) => {
      let shown = group;
      for (const name of names) shown = commandNamed(shown, name) ?? unknownCommand(shown, name);
      shown.help();
    });
  helpCommands.add(help);
  // `--help` during the group's own parse: its args then hold the words that followed it, first the command they name
  // when they name one. The help an error prints, and help shown through `help`, pass as before.
  group.on('beforeHelp', ({ error }: { error: boolean }) => {
    const [first] = group.args;
    if (error || first === undefined || first.startsWith('-')) return;
    if (!commandNamed(group, first)) unknownCommand(group, first);
  });
  return help;
}

/**
 * The words of `args` (a command's, as commander leaves them when `--help` is read: its operands, then what it did not
 * know, from the first unknown option on) that are its operands. Commander takes a word for an option when it starts
 * with `-` (`-` alone aside); it takes some of those for operands too (a negative number), which this counts as
 * options: the count is never more than the operands.
 */
function leadingOperands(args: readonly string[]): number {
  const firstOption = args.findIndex((word) => word.length > 1 && word.startsWith('-'));
  return firstOption === -1 ? args.length : firstOption;
}

/**
 * Makes `command` (one without commands of its own: svc serve, svc keys revoke) refuse `--help` after more arguments
 * than it takes, with the error commander gives the same line without `--help` (`svc serve nosuch`: too many
 * arguments, exit 2). Commander honours `--help` before it counts the arguments, so `svc serve nosuch --help` printed
 * serve's help, exit 0, where `svc keys nosuch --help` is a usage error.
 */
export function refuseExcessArgumentsBeforeHelp(command: Command): void {
  const takes = command.registeredArguments;
  if (takes.at(-1)?.variadic) return;
  // As in strictHelp: the help an error prints, and help shown through `help` (no arguments parsed), pass.
  command.on('beforeHelp', ({ error }: { error: boolean }) => {
    const given = leadingOperands(command.args);
    if (error || given <= takes.length) return;
    const [expected, s] = [takes.length, takes.length === 1 ? '' : 's'];
    command.error(`error: too many arguments for '${command.name()}'. Expected ${expected} argument${s} but got ${given}.`, {
      code: 'commander.excessArguments',
    });
  });
}
