/** Interactive confirmation for destructive commands; `--yes` skips it, a non-interactive stdin without it is refused. */
import { confirm } from '@inquirer/prompts';
import { UsageError } from './connection.ts';

export async function confirmOrExit(question: string, yes: boolean | undefined): Promise<boolean> {
  if (yes) return true;
  if (!process.stdin.isTTY) throw new UsageError(`${question} Refusing without a terminal to confirm; pass --yes.`);
  // The prompt draws on stderr so `svc keys revoke X | cat` still shows it.
  return confirm({ message: question, default: false }, { output: process.stderr });
}
