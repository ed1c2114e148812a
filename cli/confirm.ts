/** Interactive confirmation for destructive commands; `--yes` skips it, a non-interactive stdin without it is refused. */
import { UsageError } from './connection.ts';
import { terminalLine } from './terminal-text.ts';

export async function confirmOrExit(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new UsageError(`${question} Refusing without a terminal to confirm; pass --yes.`);
  // The prompt draws on stderr so `svc keys revoke X | cat` still shows it.
  // Loaded only when a prompt is shown: the prompt library stays out of every other command's start-up (svc serve).
  const { confirm } = await import('@inquirer/prompts');
  // The question names what the server answered (an organization's name, a user's e-mail): escaped like any of its text.
  return confirm({ message: terminalLine(question), default: false }, { output: process.stderr });
}
